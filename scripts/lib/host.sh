# Sourced by the scripts in scripts/: installs or starts what a fresh machine lacks.
# Needs root or sudo for apt-get and dockerd.

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi

# apt_install PACKAGE... — Debian packages, quietly.
apt_install() {
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "$@" >/dev/null
}

# ensure_static_busybox — /bin/busybox from Debian's busybox-static (the shell image's /bin/sh and
# core utilities). A dynamically linked busybox (Debian's `busybox`) is replaced.
ensure_static_busybox() {
  if [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; then
    return 0
  fi
  echo "==> installing busybox-static (the shell-vm image's /bin/sh and utilities)"
  apt_install busybox-static
}

# ensure_docker_engine — starts the installed Docker daemon when it does not answer (a machine
# whose init system did not start it). Returns non-zero when no engine can be had; callers decide
# whether that is fatal (the container tests then skip, saying so loudly).
ensure_docker_engine() {
  if ! command -v docker >/dev/null 2>&1; then
    echo "==> no Docker client on this machine"
    return 1
  fi
  if docker info >/dev/null 2>&1; then
    return 0
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    echo "==> the Docker engine does not answer and dockerd is not installed"
    return 1
  fi
  echo "==> starting the Docker engine (dockerd; log in /tmp/oxydra-dockerd.log)"
  $SUDO sh -c 'nohup dockerd >/tmp/oxydra-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.5
  done
  echo "==> the Docker engine did not come up within 30 s; see /tmp/oxydra-dockerd.log"
  return 1
}

# build_release — the release binaries every script uses (runner, oxydra-vm, shell-vm, oxydra-tui).
# One package set for all scripts: cargo unifies dependency features over the packages it is given,
# so building a different set would rebuild tokio, hyper and the rest a second time.
build_release() {
  echo "==> cargo build --release -p runner -p shell-daemon -p tui"
  cargo build --release -p runner -p shell-daemon -p tui
}
