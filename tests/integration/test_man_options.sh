#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_man_options.sh - the man pages list every option the tools' help
# prints, and render cleanly.
#
# The pages are the build's (cmake/man.cmake: build/man/, from
# docs/man/*.scd). Each must be there: ulnetd.8, ulnetctl.8, ulst.8 and
# libulnet.3. Then, for each help text, every long option (--foo, and the
# names after a '|': "--hop|hop-count" is --hop and --hop-count,
# "--verbose|-v" --verbose and -v) and every short one (-x) it prints must
# be in the page, as a whole word ("--accept" is not found in
# "--accept-port"), after the roff escapes are undone:
#  - ulnetd: `ulnetd --help`, in ulnetd(8);
#  - ulnetctl: `ulnetctl --help`, in ulnetctl(8), and the whole command
#    tree, walked from `ulnetctl --list-commands` down through each group's
#    help: a group's help (`ulnetctl net --help`) anywhere in the page; a
#    command's (`ulnetctl net add --help`) in the page's section (.SS) named
#    after it (a section may name several commands, separated by ", "); a
#    command without options must at least be named in the page;
#  - ulst: `ulst --help` in ulst(8), and each command's help (`ulst ping
#    --help`): its own options (those before "Node options") in the section
#    named after the command, all of them in the page.
# Every help must exit 0. Every option missing is listed with its page and
# section, and fails the test. The pages must render without a warning:
# `groff -man -Tutf8 -ww` (groff-base, scripts/install-deps.sh installs it)
# and, where mandoc is installed, `mandoc -Tlint -Werror`; a renderer that
# is missing is said and skipped.
# Skips (77) only when the build has no man pages (ULNET_MAN=OFF: scdoc
# not found, or -DULNET_BUILD_MAN=OFF). Environment: ULNET_BIN, ULNET_BUILD,
# ULNET_MAN, ULNET_MAN_DIR (CTest sets them).
set -u
BIN=${ULNET_BIN:-build/bin}
MAN=${ULNET_MAN_DIR:-${ULNET_BUILD:-build}/man}
if [[ ${ULNET_MAN:-ON} != ON ]]; then
	echo "SKIP: this build has no man pages (ULNET_MAN=${ULNET_MAN}: scdoc not found, or -DULNET_BUILD_MAN=OFF; scripts/install-deps.sh installs scdoc)"
	exit 77
fi
command -v perl >/dev/null || { echo "FAIL: perl (Debian's perl-base) not found"; exit 1; }

T=$(mktemp -d /tmp/ulnet-man.XXXXXX)
trap 'rm -rf "$T"' EXIT
FAILS=0
CHECKS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
# help commands are answered without a daemon; none is ever reached
export ULNET_CTL=$T/no-daemon.sock

# --- the pages: there, and rendering without warnings -------------------------------
PAGES=(ulnetd.8 ulnetctl.8 ulst.8 libulnet.3)
for p in "${PAGES[@]}"; do
	CHECKS=$((CHECKS + 1))
	[[ -s $MAN/$p ]] || fail "$MAN/$p was not generated (the build's man pages: cmake/man.cmake)"
done
((FAILS)) && { echo "$FAILS failure(s)"; exit 1; }

if command -v groff >/dev/null; then
	for p in "${PAGES[@]}"; do
		CHECKS=$((CHECKS + 1))
		GROFF_NO_SGR=1 groff -man -Tutf8 -ww -P-cbou "$MAN/$p" >"$T/render" 2>"$T/warn"
		[[ -s $T/warn ]] && { fail "groff -man -ww warns on $p:"; cat "$T/warn"; }
		grep -q "^NAME" "$T/render" || fail "$p renders without a NAME section"
	done
else
	echo "note: groff not installed (scripts/install-deps.sh installs groff-base): pages not rendered"
fi
if command -v mandoc >/dev/null; then
	# errors only: its style and paragraph warnings are about how scdoc
	# writes roff, not about the pages
	for p in "${PAGES[@]}"; do
		CHECKS=$((CHECKS + 1))
		mandoc -Tlint -Werror "$MAN/$p" >"$T/warn" 2>&1 || { fail "mandoc -Tlint -Werror on $p:"; cat "$T/warn"; }
	done
fi

# --- helpers ---------------------------------------------------------------------------
# A page as text, one line per input line: "SECTION<TAB>text", SECTION the
# title of the .SS the line is in ("" outside any; each .SH ends one), roff
# requests dropped and escapes undone.
flatten() {
	perl -ne '
		chomp;
		next if /^\.\\"/;
		my $text;
		if (/^\.S([HS])\s*(.*)$/) {
			my ($k, $title) = ($1, $2);
			$title =~ s/^"(.*)"$/$1/;
			$title =~ s/\\f(\[[^]]*\]|\(..|.)//g;
			$title =~ s/\\&//g;
			$title =~ s/\\-/-/g;
			$sec = $k eq "S" ? $title : "";
			$text = $title;
		} elsif (/^[.\x27]/) {
			next;
		} else {
			$text = $_;
		}
		$text =~ s/\\f(\[[^]]*\]|\(..|.)//g;
		$text =~ s/\\&//g;
		$text =~ s/\\-/-/g;
		$text =~ s/\\\(aq|\\\*\(Aq/\x27/g;
		$text =~ s/\\\(dq/"/g;
		$text =~ s/\\e|\\\\/\\/g;
		print "$sec\t$text\n";
	' "$1"
}

# opts FILE: the options a help text prints, one a line
opts() {
	perl -ne '
		while (/(?<![\w-])(--[A-Za-z][\w-]*(?:\|-{0,2}[A-Za-z][\w-]*)*)/g) {
			for my $o (split /\|/, $1) {
				$o = "--$o" unless $o =~ /^-/;
				$seen{$o} = 1;
			}
		}
		while (/(?<![\w-])(-[A-Za-z])(?![\w-])/g) { $seen{$1} = 1; }
		END { print "$_\n" for sort keys %seen }
	' "$1"
}

# in_text FLAT SECTION OPTION: OPTION is a word of the page (SECTION "": anywhere,
# else in a section whose title names SECTION)
in_text() {
	perl -e '
		my ($file, $sec, $opt) = @ARGV;
		open(my $f, "<", $file) or die;
		while (<$f>) {
			chomp;
			my ($s, $t) = split /\t/, $_, 2;
			next if $sec ne "" && !grep { $_ eq $sec } split /, /, $s;
			exit 0 if defined $t && $t =~ /(?<![\w-])\Q$opt\E(?![\w-])/;
		}
		exit 1;
	' "$@"
}

# has_section FLAT SECTION: a section of the page is titled SECTION (or names it)
has_section() {
	perl -e '
		my ($file, $sec) = @ARGV;
		open(my $f, "<", $file) or die;
		while (<$f>) {
			my ($s) = split /\t/;
			exit 0 if grep { $_ eq $sec } split /, /, $s;
		}
		exit 1;
	' "$@"
}

# check PAGE SECTION WHAT HELPFILE: every option of HELPFILE in PAGE (in SECTION)
check() {
	local page=$1 sec=$2 what=$3 help=$4 o n=0 where="the page"
	[[ -n $sec ]] && where="section '$sec' of the page"
	while read -r o; do
		n=$((n + 1))
		CHECKS=$((CHECKS + 1))
		in_text "$T/$page.flat" "$sec" "$o" || fail "$page: $o (in \`$what\`) is not in $where"
	done < <(opts "$help")
	echo "$what: $n option(s) in $page${sec:+ ($sec)}"
}

# run_help OUT CMD...: run CMD's help into OUT; it must exit 0 and print something
run_help() {
	local out=$1
	shift
	"$@" >"$out" 2>&1
	local rc=$?
	CHECKS=$((CHECKS + 1))
	((rc == 0)) || { fail "\`${*#"$BIN/"}\` exited $rc:"; cat "$out"; return 1; }
	[[ -s $out ]] || { fail "\`${*#"$BIN/"}\` printed nothing"; return 1; }
}

for p in "${PAGES[@]}"; do flatten "$MAN/$p" >"$T/$p.flat"; done

# --- ulnetd -------------------------------------------------------------------------------
run_help "$T/h" "$BIN/ulnetd" --help && check ulnetd.8 "" "ulnetd --help" "$T/h"

# --- ulnetctl: its own options, then the command tree -----------------------------------
run_help "$T/h" "$BIN/ulnetctl" --help && check ulnetctl.8 "" "ulnetctl --help" "$T/h"

# subs FILE: the commands a group's help lists ("name: ..." at the start of
# a line; fault's "usage:" lines are not commands)
subs() { perl -ne 'print "$1\n" if /^([a-z][a-z0-9_-]*): / && $1 ne "usage"' "$1"; }

# walk PATH...: the command at PATH (the words after ulnetctl)
walk() {
	local path=("$@") f s
	local name=${path[-1]} parent=
	((${#path[@]} > 1)) && parent="${path[-2]} "
	f=$T/h.$(IFS=_; echo "${path[*]}")
	run_help "$f" "$BIN/ulnetctl" "${path[@]}" --help || return
	if [[ $(head -1 "$f") == "$parent$name:"* ]]; then
		# a command: its options in its own section
		if [[ -n $(opts "$f") ]]; then
			CHECKS=$((CHECKS + 1))
			if has_section "$T/ulnetctl.8.flat" "${path[*]}"; then
				check ulnetctl.8 "${path[*]}" "ulnetctl ${path[*]} --help" "$f"
			else
				fail "ulnetctl.8: no section for \`${path[*]}\`, which has options ($(opts "$f" | tr '\n' ' '))"
			fi
		else
			# named: a section of its own, its words in the page, or its
			# name in its group's section ("set" lists its globals)
			CHECKS=$((CHECKS + 1))
			has_section "$T/ulnetctl.8.flat" "${path[*]}" || grep -qF -- "${path[*]}" "$T/ulnetctl.8.flat" ||
				{ ((${#path[@]} > 1)) && in_text "$T/ulnetctl.8.flat" "${path[*]:0:${#path[@]}-1}" "$name"; } ||
				fail "ulnetctl.8: \`${path[*]}\` is not named in the page"
		fi
		return
	fi
	# a group: its help anywhere in the page, then each of its commands
	check ulnetctl.8 "" "ulnetctl ${path[*]} --help" "$f"
	local list
	mapfile -t list < <(subs "$f")
	((${#list[@]})) || fail "\`ulnetctl ${path[*]} --help\` lists no command"
	((${#path[@]} < 4)) || { fail "ulnetctl ${path[*]}: deeper than the tree goes"; return; }
	for s in "${list[@]}"; do walk "${path[@]}" "$s"; done
}

run_help "$T/list" "$BIN/ulnetctl" --list-commands
mapfile -t TOP < <(subs "$T/list")
((${#TOP[@]} >= 15)) || fail "ulnetctl --list-commands lists ${#TOP[@]} commands"
for c in "${TOP[@]}"; do walk "$c"; done

# --- ulst: its options, then each command's ----------------------------------------------
if run_help "$T/h" "$BIN/ulst" --help; then
	check ulst.8 "" "ulst --help" "$T/h"
	# the commands: "  NAME ..." lines after "one command:"
	mapfile -t ULST_CMDS < <(awk '/one command:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }' "$T/h")
	((${#ULST_CMDS[@]} >= 3)) || fail "ulst --help lists ${#ULST_CMDS[@]} commands"
	for c in "${ULST_CMDS[@]}"; do
		run_help "$T/h.$c" "$BIN/ulst" "$c" --help || continue
		sed '/^Node options/,$d' "$T/h.$c" >"$T/h.$c.own"
		CHECKS=$((CHECKS + 1))
		has_section "$T/ulst.8.flat" "$c" || fail "ulst.8: no section for the command '$c'"
		check ulst.8 "$c" "ulst $c --help (its own options)" "$T/h.$c.own"
		check ulst.8 "" "ulst $c --help" "$T/h.$c"
	done
fi

if ((FAILS)); then
	echo "$FAILS failure(s) in $CHECKS checks"
	exit 1
fi
echo "PASS ($CHECKS checks)"
