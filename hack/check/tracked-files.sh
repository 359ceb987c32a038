#!/usr/bin/env bash
# Fails when a tracked file is over 1 MiB or is an executable binary (an ELF,
# Mach-O or PE file): build outputs belong in bin/ or a temporary directory,
# never in the repository, where every clone and module download would carry
# them. Run by `make check`.
set -euo pipefail
cd "$(dirname "$0")/../.."

max=$((1 << 20))
bad=0
while IFS= read -r -d '' f; do
	[[ -f "$f" ]] || continue # deleted in the work tree, not yet committed
	size=$(stat -c %s "$f")
	if ((size > max)); then
		echo "tracked file over 1 MiB ($size bytes): $f" >&2
		bad=1
	fi
	magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
	case "$magic" in
	7f454c46 | cffaedfe | cefaedfe | feedface | feedfacf | 4d5a*)
		echo "tracked executable binary: $f" >&2
		bad=1
		;;
	esac
done < <(git ls-files -z)
exit $bad
