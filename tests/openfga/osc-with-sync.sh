#!/usr/bin/env bash
# python-openstackclient with the duties a deployment of the OpenFGA assignment driver takes
# on around it (docs/assignment.md), for the OpenStack smoke session on that driver:
#   role create        -> the new role's id is mapped to $FGA_NEW_ROLE_RELATION in the role
#                         table file every node re-reads ($FGA_ROLE_MAP)
#   group add user     -> the membership is written into the store (rule 9's group sync)
#   group remove user  -> and deleted from it
# Everything else is the CLI unchanged: same arguments, output and exit status.
#
# Environment: OPENSTACK_CLI (the real CLI), FGA_URL, FGA_STORE_ID, FGA_ROLE_MAP,
#              FGA_NEW_ROLE_RELATION [operator]
set -uo pipefail
CLI="${OPENSTACK_CLI:?}"
out="$("$CLI" "$@")"
rc=$?
[ -n "$out" ] && printf '%s\n' "$out"
[ "$rc" -eq 0 ] || exit "$rc"

# The value of option $1 among the remaining arguments.
opt() {
    local want=$1; shift
    while [ $# -gt 1 ]; do
        [ "$1" = "$want" ] && { printf '%s' "$2"; return; }
        shift
    done
}

membership() {   # membership writes|deletes ARGS...: the group and user are the last two
    local part=$1; shift
    local group="${*: -2:1}" user="${*: -1}"
    local gid uid
    gid="$("$CLI" group show --domain "$(opt --group-domain "$@")" "$group" -f value -c id)" || exit 1
    uid="$("$CLI" user show --domain "$(opt --user-domain "$@")" "$user" -f value -c id)" || exit 1
    local extra='"on_duplicate": "ignore"'
    [ "$part" = deletes ] && extra='"on_missing": "ignore"'
    curl -sf -X POST "$FGA_URL/stores/$FGA_STORE_ID/write" -H 'Content-Type: application/json' \
        -d "{\"$part\": {\"tuple_keys\": [{\"user\": \"user:$uid\", \"relation\": \"member\", \"object\": \"group:$gid\"}], $extra}}" \
        >/dev/null || { echo "membership sync failed" >&2; exit 1; }
}

case "${1:-} ${2:-}" in
    "role create")
        id="$("$CLI" role show "$3" -f value -c id)" || exit 1
        tmp="$FGA_ROLE_MAP.tmp.$$"
        { cat "$FGA_ROLE_MAP"; echo; echo "$id:${FGA_NEW_ROLE_RELATION:-operator}"; } > "$tmp" && mv "$tmp" "$FGA_ROLE_MAP"
        ;;
    "group add")
        [ "${3:-}" = user ] && membership writes "${@:4}"
        ;;
    "group remove")
        [ "${3:-}" = user ] && membership deletes "${@:4}"
        ;;
esac
exit 0
