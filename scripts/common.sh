# Sourced by every project script that runs under `set -e` (scripts/, kernel_patch/, .ci/run).

# A command that fails and ends the script names itself on stderr (file, line, command, exit
# status) instead of the script exiting silently. errtrace carries the trap into functions,
# command substitutions and subshells, so a failure inside `x=$(f)` is named where it happened
# and again where the assignment ended the script. For a pipeline bash names its last command;
# the statuses of all its stages follow.
set -o errtrace
trap 'hostnet_err_st=("$?" "${PIPESTATUS[@]}"); printf "%s: line %s: \`%s\` failed (exit %s%s)\n" \
	"${BASH_SOURCE[0]:-$0}" "$LINENO" "$BASH_COMMAND" "${hostnet_err_st[0]}" \
	"$([ "${#hostnet_err_st[@]}" -gt 2 ] && echo "; pipeline stages: ${hostnet_err_st[*]:1}")" >&2' ERR

# What the project installed on this machine, one Debian package per line: the fresh-machine
# rehearsal (scripts/fresh-machine.sh) removes exactly these, so it never removes a package
# the machine had before hostnet came.
HOSTNET_INSTALLED=${HOSTNET_INSTALLED:-/var/lib/hostnet/installed-packages}

# Record packages ("name" or "name=version") about to be installed by the project.
hostnet_record_installed() {
	mkdir -p "$(dirname "$HOSTNET_INSTALLED")"
	local p
	for p in "$@"; do
		grep -qxF -- "${p%%=*}" "$HOSTNET_INSTALLED" 2>/dev/null || echo "${p%%=*}" >>"$HOSTNET_INSTALLED"
	done
}
