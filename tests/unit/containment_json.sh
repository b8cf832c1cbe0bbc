#!/bin/sh
# bwgrade --contain says in its JSON what confined the workers: as root the
# worker user (nobody) and a PID namespace; with the namespace switched off
# (BWLAB_CONTAIN_NO_PIDNS=1) the subreaper; without --contain nothing.
# Catches the field missing, or saying what was asked rather than what ran.
# usage: containment_json.sh BWGRADE FAKE_WORKER
set -eu
bwgrade=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The worker user must be able to run it: the build tree may be 0700.
chmod 755 "$dir"
cp "$2" "$dir/fake_worker"
chmod 755 "$dir/fake_worker"
field() {
    "$bwgrade" test vector_sum --worker "$dir/fake_worker" --groups special --quiet --json - "$@" \
        2>/dev/null | tr -d ' \n' | grep -o '"containment":{[^}]*}' || true
}
user=same
ns='(true|false)'
if [ "$(id -u)" = 0 ]; then
    user=nobody
    ns=true
fi
check() {
    if ! printf '%s\n' "$1" | grep -Eq "^$2\$"; then
        echo "FAIL: $3: got '$1', want /$2/"
        exit 1
    fi
}
check "$(field --contain)" \
    "\"containment\":\\{\"user\":\"$user\",\"pid_namespace\":$ns,\"subreaper\":(false|true),\"sandbox\":\"none\"\\}" \
    "--contain"
check "$(BWLAB_CONTAIN_NO_PIDNS=1 field --contain)" \
    "\"containment\":\\{\"user\":\"$user\",\"pid_namespace\":false,\"subreaper\":true,\"sandbox\":\"none\"\\}" \
    "--contain, namespace off"
check "$(field)" \
    "\"containment\":\\{\"user\":\"same\",\"pid_namespace\":false,\"subreaper\":false,\"sandbox\":\"none\"\\}" \
    "no --contain"
echo CONTAIN_JSON_OK
