# shellcheck shell=bash
# hack/lib.sh: small shell helpers shared by the hack/ scripts. Source it:
#   . "$(dirname "$0")/lib.sh"
# It sets no shell options; the caller picks set -euo pipefail.

# log MSG...: one line on stderr, prefixed with the script name and UTC time.
log() { printf '%s %s: %s\n' "$(date -u +%H:%M:%S)" "${0##*/}" "$*" >&2; }

# die MSG...: log MSG and exit 1.
die() { log "ERROR: $*"; exit 1; }

# free_port: print a TCP port on 127.0.0.1 that the kernel reports free right now.
# (There is a small race until the caller binds it; pick it just before use.)
free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# wait_http URL [SECONDS]: poll URL until it answers with HTTP 2xx, for at most SECONDS (default 30).
# Returns 0 when it answered, 1 on timeout. Uses curl when present, else python3.
wait_http() {
	local url=$1 secs=${2:-30} deadline
	deadline=$(($(date +%s) + secs))
	while :; do
		if command -v curl >/dev/null 2>&1; then
			curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null && return 0
		else
			python3 - "$url" <<'PY' 2>/dev/null && return 0
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=2).read()
PY
		fi
		(($(date +%s) >= deadline)) && return 1
		sleep 0.2
	done
}

# wait_port PORT [SECONDS]: wait until something accepts TCP connections on 127.0.0.1:PORT.
wait_port() {
	local port=$1 secs=${2:-30} deadline
	deadline=$(($(date +%s) + secs))
	until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		(($(date +%s) >= deadline)) && return 1
		sleep 0.2
	done
}

# repo_root: absolute path of the repository holding this file.
repo_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd); }
