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
# whose init system did not start it). Returns non-zero when no engine can be had (at once when
# the daemon it started exits); callers decide whether that is fatal.
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
  local log="${OXYDRA_DOCKERD_LOG:-/tmp/oxydra-dockerd.log}" pid
  echo "==> starting the Docker engine (dockerd; log in $log)"
  pid=$($SUDO sh -c "nohup dockerd >$log 2>&1 </dev/null & echo \$!")
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then
      return 0
    fi
    if [ -n "$pid" ] && [ ! -e "/proc/$pid" ]; then
      echo "==> dockerd exited at once; the end of $log:"
      tail -n 5 "$log" 2>/dev/null | sed 's/^/    /'
      return 1
    fi
    sleep 0.5
  done
  echo "==> the Docker engine did not come up within 30 s; see $log"
  return 1
}

# choose_first_tier USER PROCESS_FLAG — the tier of a first run, on stdout: "container" when a
# Docker engine answers, "process" when the user chose it (PROCESS_FLAG = yes, or "y" to the
# question asked on a terminal). Without an engine and without that choice it says how to choose
# and returns non-zero: the process tier is never picked for the user.
choose_first_tier() {
  local user="$1" process="$2" answer
  if [ "$process" = yes ]; then
    echo process
    return 0
  fi
  if ensure_docker_engine >&2; then
    echo container
    return 0
  fi
  if [ -t 0 ] && [ -t 2 ]; then
    printf '%s' "==> no Docker engine answers. Run $user's agent in the process tier instead (host \
processes confined only by Landlock; written to runner.toml)? [y/N] " >&2
    read -r answer || answer=""
    case "$answer" in
      y|Y|yes|YES) echo process; return 0 ;;
    esac
  fi
  {
    echo "error: no Docker engine answers, and the container tier needs one."
    echo "  Start Docker and re-run, or choose the process tier (host processes confined only by"
    echo "  Landlock) with:  ./scripts/run.sh --process $user"
  } >&2
  return 1
}

# user_tier USER — the tier ./runner.toml runs USER in, on stdout: `tier` in their [users.USER]
# table, else the file's top-level `tier`, else "container". Nothing when USER has no table.
user_tier() {
  [ -f runner.toml ] || return 0
  awk -v user="$1" '
    /^[ \t]*\[/ {
      section = $0
      sub(/^[ \t]*\[/, "", section); sub(/\][ \t]*(#.*)?$/, "", section); gsub(/[ \t]/, "", section)
      in_user = (section == "users." user || section == "users.\"" user "\"")
      if (in_user) found = 1
      tables = 1
      next
    }
    /^[ \t]*tier[ \t]*=/ {
      value = $0
      sub(/^[^=]*=[ \t]*"/, "", value); sub(/".*/, "", value)
      if (!tables) global = value
      else if (in_user) own = value
    }
    END {
      if (!found) exit
      if (own != "") print own
      else if (global != "") print global
      else print "container"
    }
  ' runner.toml
}

# provider_setting KEY — "set:VALUE" for KEY under [provider] in ./agent.toml (quotes removed),
# nothing when the file or the key is absent (the default applies).
provider_setting() {
  [ -f agent.toml ] || return 0
  awk -v key="$1" '
    /^[[:space:]]*\[/ { inside = ($0 ~ /^[[:space:]]*\[provider\][[:space:]]*(#.*)?$/); next }
    inside && $0 ~ ("^[[:space:]]*" key "[[:space:]]*=") {
      sub(/^[^=]*=[[:space:]]*/, ""); sub(/[[:space:]]*(#[^"]*)?$/, ""); gsub(/^"|"$/, "")
      print "set:" $0; exit
    }' agent.toml
}

# check_provider_key USER — before the build: the variable agent.toml's [provider] names (default
# OPENAI_API_KEY) is set, and the provider accepts its key, asked with one GET of its model list
# (free; the key goes to curl on stdin, never on its command line). A missing or refused key stops
# the script with what to do; a provider that cannot be reached is only said.
check_provider_key() {
  local user="$1" kind url env key models_url auth status where
  kind=$(provider_setting kind); kind="${kind#set:}"
  url=$(provider_setting base_url); url="${url#set:}"; url="${url:-https://api.openai.com/v1}"
  url="${url%/}"
  env=$(provider_setting api_key_env)
  if [ -z "$env" ]; then env=OPENAI_API_KEY; else env="${env#set:}"; fi
  if [ -f agent.toml ]; then where="edit [provider] in agent.toml"; else
    where="cp agent.toml.example agent.toml and edit [provider] (examples for
  OpenRouter, Ollama and Anthropic in README.md), or let \`runner init\` ask:
    cargo run --release -p runner -- --user $user init"
  fi
  if [ -z "$env" ]; then
    echo "==> model server $url (no key: agent.toml says api_key_env = \"\")"
    return 0
  fi
  key="${!env:-}"
  if [ -z "$key" ]; then
    {
      echo "error: \$$env is not set, and the model ($url) needs it."
      echo "  Set it:  $env=... ./scripts/run.sh $user"
      echo "  or choose another model: $where."
    } >&2
    return 1
  fi
  if ! command -v curl >/dev/null 2>&1; then
    echo "==> \$$env is set (no curl here to check it with $url)"
    return 0
  fi
  if [ "$kind" = anthropic ]; then
    models_url="$url/v1/models"
    auth="header = \"x-api-key: $key\"
header = \"anthropic-version: 2023-06-01\""
  else
    models_url="$url/models"
    auth="header = \"Authorization: Bearer $key\""
  fi
  status=$(printf '%s\n' "$auth" | curl -s -o /dev/null -w '%{http_code}' --max-time 15 \
    --config - "$models_url" 2>/dev/null) || true
  case "$status" in
    2??) echo "==> $url accepts the key in \$$env" ;;
    401|403)
      {
        echo "error: $url refused the key in \$$env (HTTP $status): check it,"
        echo "  or choose another model: $where."
      } >&2
      return 1
      ;;
    000|"") echo "==> cannot reach $url to check the key in \$$env; going on" ;;
    *) echo "==> $url answered HTTP $status when asked for its models; going on" ;;
  esac
}

# ensure_cmake — Debian's cmake: libsql's `encryption` feature (the memory store's encryption at
# rest) builds its SQLite cipher library with it, so nothing that links the memory crate builds
# without it.
ensure_cmake() {
  if ! command -v cmake >/dev/null 2>&1; then
    echo "==> installing cmake (libsql's encryption at rest is built with it)"
    apt_install cmake
  fi
}

# build_release — the release binaries every script uses (runner, oxydra-vm, shell-vm, oxydra-tui).
# One package set for all scripts: cargo unifies dependency features over the packages it is given,
# so building a different set would rebuild tokio, hyper and the rest a second time.
build_release() {
  ensure_cmake
  echo "==> cargo build --release -p runner -p shell-daemon -p tui"
  cargo build --release -p runner -p shell-daemon -p tui
}
