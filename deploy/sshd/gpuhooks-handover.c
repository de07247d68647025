/*
 * gpuhooks-handover: the privileged step of an SSH session's move into the Pod's `main`
 * container, in one process, so that nothing is looked up in the workspace's files while the
 * session holds a capability (README.md, "The handover").
 *
 *   gpuhooks-handover <pid> <starttime> <uid> <gid> -- <program> [<argument>...]
 *
 * <pid> is main's first process, <starttime> its start time (field 22 of /proc/<pid>/stat) and
 * <uid>, <gid> its effective ids, all as gpuhooks-enter read them. In this order:
 *
 *  1. Open /proc/<pid> once. Everything else about the process is read through that directory:
 *     a descriptor of a /proc/<pid> directory stays bound to the process it was opened for (once
 *     that process is gone, every lookup through it fails), so a restart of main between
 *     gpuhooks-enter's look and this step, or a reused PID, is refused rather than entered.
 *     The start time and ids must still be those gpuhooks-enter saw.
 *  2. Open main's namespaces (ipc, uts, net, pid, mnt) and its root directory, all through the
 *     sidecar's own /proc.
 *  3. Join them; chroot into main's root (whatever main made it: a main that chrooted itself is
 *     entered in its chroot); change to "/". Only kernel objects are used: no path is resolved
 *     in main's filesystem until step 5.
 *  4. Drop every privilege: empty the capability bounding set (needs CAP_SETPCAP), clear the
 *     ambient set, take main's groups, gid and uid, clear the permitted, effective and
 *     inheritable sets, set no_new_privs; then check that all of it holds.
 *  5. Execute <program> (resolved in main's root, now with no privilege), in main's PID
 *     namespace: directly when it is this process's own (a Pod with shareProcessNamespace),
 *     otherwise in a child, whose exit status becomes this process's.
 *
 * Nothing here reads a user database, loads a library or reads an environment variable, and
 * the program gets this process's environment unchanged (gpuhooks-enter starts it with a clean
 * one). Built statically.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_GROUPS 65536
static gid_t groups[MAX_GROUPS];
static char status_text[1 << 16];

static void die(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fputs("gpuhooks-enter: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  exit(1);
}

/* A decimal number that fits `max`, or death naming `what`. */
static unsigned long long number(const char *text, unsigned long long max, const char *what) {
  char *end = NULL;
  errno = 0;
  if (text[0] < '0' || text[0] > '9') die("%s \"%s\" is not a number", what, text);
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || value > max) die("%s \"%s\" is not a number up to %llu", what, text, max);
  return value;
}

/* The whole of file `name` under the directory `dir`, NUL-terminated, into buffer. */
static void read_at(int dir, const char *name, char *buffer, size_t size, const char *pid) {
  int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("process %s is gone (or changed) since it was chosen: %s: %s", pid, name, strerror(errno));
  size_t used = 0;
  for (;;) {
    if (used + 1 >= size) die("/proc/%s/%s is larger than expected", pid, name);
    ssize_t got = read(fd, buffer + used, size - 1 - used);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) die("cannot read /proc/%s/%s: %s", pid, name, strerror(errno));
    if (got == 0) break;
    used += (size_t)got;
  }
  buffer[used] = '\0';
  close(fd);
}

/* Field 22 of /proc/<pid>/stat (the start time), after the command name in parentheses. */
static unsigned long long start_time(int dir, const char *pid) {
  char stat_text[4096];
  read_at(dir, "stat", stat_text, sizeof stat_text, pid);
  char *field = strrchr(stat_text, ')');
  if (field == NULL) die("cannot read the start time of process %s", pid);
  /* Fields 3 (state) to 22 (starttime): skip 19 separators. */
  for (int i = 0; i < 20; i++) {
    field = strchr(field + 1, ' ');
    if (field == NULL) die("cannot read the start time of process %s", pid);
  }
  return strtoull(field + 1, NULL, 10);
}

/* The value after "<key>:" on its own line of /proc/<pid>/status, or NULL. */
static char *status_line(const char *key) {
  size_t length = strlen(key);
  for (char *line = status_text; line != NULL && *line != '\0';) {
    if (strncmp(line, key, length) == 0 && line[length] == ':') return line + length + 1;
    line = strchr(line, '\n');
    if (line != NULL) line++;
  }
  return NULL;
}

/* The second (effective) id of a "Uid:"/"Gid:" line: real, effective, saved, filesystem. */
static unsigned long long effective_id(const char *key, const char *pid) {
  char *value = status_line(key);
  unsigned long long real, effective;
  if (value == NULL || sscanf(value, "%llu %llu", &real, &effective) != 2) die("cannot read %s of process %s", key, pid);
  return effective;
}

/* main's supplementary groups, from its "Groups:" line. */
static size_t read_groups(const char *pid) {
  char *value = status_line("Groups");
  if (value == NULL) die("cannot read the groups of process %s", pid);
  size_t count = 0;
  char *end = strchr(value, '\n');
  if (end != NULL) *end = '\0';
  for (char *word = strtok(value, " \t"); word != NULL; word = strtok(NULL, " \t")) {
    if (count == MAX_GROUPS) die("process %s has more than %d groups", pid, MAX_GROUPS);
    groups[count++] = (gid_t)number(word, UINT_MAX - 1, "a group of main's first process");
  }
  if (end != NULL) *end = '\n';
  return count;
}

static int open_namespace(int dir, const char *name, const char *pid) {
  char path[32];
  snprintf(path, sizeof path, "ns/%s", name);
  int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("cannot open the %s namespace of process %s: %s", name, pid, strerror(errno));
  return fd;
}

static void join(int fd, int type, const char *name) {
  if (setns(fd, type) < 0) die("cannot enter main's %s namespace: %s", name, strerror(errno));
  close(fd);
}

static pid_t child_pid = 0;
static void forward(int signal_number) {
  if (child_pid > 0) kill(child_pid, signal_number);
}

/* Runs the program in a child (which joins the PID namespace) and exits as it did. */
static void run_in_child(char **program) {
  child_pid = fork();
  if (child_pid < 0) die("cannot start the session: %s", strerror(errno));
  if (child_pid == 0) {
    execve(program[0], program, environ);
    die("cannot run %s in the workspace: %s", program[0], strerror(errno));
  }
  struct sigaction action = {.sa_handler = forward};
  sigemptyset(&action.sa_mask);
  const int forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH};
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) sigaction(forwarded[i], &action, NULL);
  int status;
  while (waitpid(child_pid, &status, 0) < 0) {
    if (errno != EINTR) die("lost the session: %s", strerror(errno));
  }
  if (WIFEXITED(status)) exit(WEXITSTATUS(status));
  exit(128 + WTERMSIG(status));
}

int main(int argc, char **argv) {
  if (argc < 7 || strcmp(argv[5], "--") != 0) die("usage: gpuhooks-handover <pid> <starttime> <uid> <gid> -- <program> [<argument>...]");
  const char *pid = argv[1];
  number(pid, INT_MAX, "the pid");
  unsigned long long expected_start = number(argv[2], ULLONG_MAX, "the start time");
  uid_t uid = (uid_t)number(argv[3], UINT_MAX - 1, "the uid");
  gid_t gid = (gid_t)number(argv[4], UINT_MAX - 1, "the gid");
  char **program = argv + 6;

  /* 1. The process, once. */
  char path[64];
  snprintf(path, sizeof path, "/proc/%s", pid);
  int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) die("process %s is gone since it was chosen; try again", pid);
  if (start_time(dir, pid) != expected_start) die("process %s is not the one chosen (main restarted); try again", pid);
  read_at(dir, "status", status_text, sizeof status_text, pid);
  if (effective_id("Uid", pid) != uid || effective_id("Gid", pid) != gid)
    die("the user of process %s changed since it was chosen; try again", pid);
  size_t group_count = read_groups(pid);

  /* 2. Its namespaces and root, through this container's /proc. */
  int ipc = open_namespace(dir, "ipc", pid), uts = open_namespace(dir, "uts", pid), net = open_namespace(dir, "net", pid);
  int pid_ns = open_namespace(dir, "pid", pid), mnt = open_namespace(dir, "mnt", pid);
  int root = openat(dir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) die("cannot open the root directory of process %s: %s", pid, strerror(errno));
  struct stat own_pid_ns, target_pid_ns;
  if (stat("/proc/self/ns/pid", &own_pid_ns) < 0 || fstat(pid_ns, &target_pid_ns) < 0) die("cannot compare PID namespaces: %s", strerror(errno));
  int fork_needed = own_pid_ns.st_dev != target_pid_ns.st_dev || own_pid_ns.st_ino != target_pid_ns.st_ino;
  /* Still the same process: everything above belongs to it. */
  if (start_time(dir, pid) != expected_start) die("process %s is not the one chosen (main restarted); try again", pid);
  close(dir);

  /* 3. In. */
  join(ipc, CLONE_NEWIPC, "ipc");
  join(uts, CLONE_NEWUTS, "uts");
  join(net, CLONE_NEWNET, "network");
  join(pid_ns, CLONE_NEWPID, "PID");
  join(mnt, CLONE_NEWNS, "mount");
  if (fchdir(root) < 0 || chroot(".") < 0 || chdir("/") < 0) die("cannot change into main's root directory: %s", strerror(errno));
  close(root);

  /* 4. Down to main's user, with no capability and no way to gain one. */
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break; /* past the kernel's last capability */
    die("cannot empty the capability bounding set (%s); the sidecar needs CAP_SETPCAP", strerror(errno));
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) die("cannot clear the ambient capabilities: %s", strerror(errno));
  if (setgroups(group_count, groups) < 0 || setresgid(gid, gid, gid) < 0) die("cannot take main's groups: %s", strerror(errno));
  if (setresuid(uid, uid, uid) < 0) die("cannot take main's user %u: %s", (unsigned)uid, strerror(errno));
  struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) < 0) die("cannot clear the capabilities: %s", strerror(errno));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("cannot set no_new_privs: %s", strerror(errno));

  /* Checked, not assumed. */
  if (syscall(SYS_capget, &header, data) < 0) die("cannot read the capabilities: %s", strerror(errno));
  for (int i = 0; i < 2; i++)
    if (data[i].effective != 0 || data[i].permitted != 0 || data[i].inheritable != 0) die("a capability is left; refusing the session");
  for (int cap = 0; cap <= 63; cap++) {
    int in_set = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (in_set < 0) break;
    if (in_set != 0) die("capability %d is left in the bounding set; refusing the session", cap);
  }
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) die("no_new_privs is not set; refusing the session");
  if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid) die("the ids did not change; refusing the session");

  /* 5. The session. */
  if (fork_needed) run_in_child(program);
  execve(program[0], program, environ);
  die("cannot run %s in the workspace: %s", program[0], strerror(errno));
}
