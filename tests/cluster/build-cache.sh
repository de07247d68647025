# Sourced by build-binaries.sh and build-helm.sh: the steps the two builds share
# around a cache directory outside the repository. The sourcing script sets
#
#   tool      the name its log lines start with
#   cache     the cache directory, without a trailing slash
#   programs  (array) the executables the build leaves in it
#   stamp     a hash of what the build depends on (cache_stamp makes one)
#   result    the line it prints last on stdout
#
# then calls cache_reuse_or_start, builds the programs into "$out", and calls
# cache_install.

log() { printf '%s: %s\n' "$tool" "$*" >&2; }

# The hash of the given files and of this file, for the `stamp` variable: a
# change to any of them, or to how the build is done, makes the cache stale.
cache_stamp() {
  cat "$@" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1
}

# True when the stamp file records this build's stamp and every program is there.
cache_up_to_date() {
  local name
  [[ -f $cache/.stamp && "$(cat "$cache/.stamp")" == "$stamp" ]] || return 1
  for name in "${programs[@]}"; do
    [[ -x "$cache/$name" ]] || return 1
  done
}

# When the cache is fresh, prints the result and exits. Otherwise takes the
# cache directory's lock, so that one build runs at a time per directory and a
# second caller waits and then finds it fresh; checks that Go is on PATH
# ($1 says what it is needed for); makes the scratch directory "$out", removed
# on exit; and starts the clock that cache_install reports.
cache_reuse_or_start() {
  if cache_up_to_date; then
    echo "$result"
    exit 0
  fi
  mkdir -p "$(dirname "$cache")"
  exec 9>"$cache.lock"
  flock 9
  if cache_up_to_date; then
    echo "$result"
    exit 0
  fi
  if ! command -v go >/dev/null 2>&1; then
    log "go is not on PATH ($1)"
    exit 1
  fi
  out="$(mktemp -d "$cache.build.XXXXXX")"
  trap 'rm -rf "$out"' EXIT
  started=$SECONDS
}

# Moves the built programs from "$out" into the cache, records the stamp and
# prints the result.
cache_install() {
  local name
  mkdir -p "$cache"
  for name in "${programs[@]}"; do
    mv -f "$out/$name" "$cache/$name"
  done
  echo "$stamp" >"$cache/.stamp"
  log "built ${programs[*]} in $((SECONDS - started))s"
  echo "$result"
}
