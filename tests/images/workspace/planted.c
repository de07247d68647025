/* Planted by a workspace at paths a privileged program might be looked up at: appends
 * "planted <argv0> uid=<uid> capeff=<hex>" to /pwned (in whatever root it runs), then runs what
 * follows "--" in its arguments, as the program it stands in for would. */
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
  struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2] = {{0}};
  syscall(SYS_capget, &header, data);
  char line[512];
  int n = snprintf(line, sizeof line, "planted %s uid=%u capeff=%08x%08x\n", argv[0], (unsigned)geteuid(), data[1].effective, data[0].effective);
  int fd = open("/pwned", O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    if (write(fd, line, (size_t)n) < 0) {
    }
    close(fd);
  }
  for (int i = 1; i < argc - 1; i++) {
    if (strcmp(argv[i], "--") == 0) {
      execv(argv[i + 1], argv + i + 1);
      return 127;
    }
  }
  return 0;
}
