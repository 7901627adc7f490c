#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_ctl_peer_ranges.sh - NID ranges in "peer add|del --nid" and in
# import's "peer ni" lists, and import --del of some of a peer's NIDs, end
# to end through ulnetd + ulnetctl, against what lnetctl 2.17 does
# (sanity-lnet tests 4-13, 18a, 18b, 21-25, 99a): the expanded NIDs and
# their order in "peer show", lnetctl's texts and exit codes for bad lists.
# The peers are never reached (no NI on their nets): no traffic, no root.
set -u

TAG=peer-ranges
. "$(dirname "$0")/../support/ctl_lib.sh"
PORT=$((25000 + ($$ % 4000) * 2))

has() { # has STREAM TEXT
	local s=$1 txt=$2
	CHECKS=$((CHECKS + 1))
	if [[ $s == out ]]; then grep -qF -- "$txt" "$T/out" || fail "stdout of '$LAST' lacks '$txt': $OUT"
	else grep -qF -- "$txt" "$T/err" || fail "stderr of '$LAST' lacks '$txt': $ERR"; fi
}
# nids PRIMARY WANT: "peer show --nid PRIMARY" lists exactly WANT, in order
nids() {
	local prim=$1 want=$2 got
	run P 0 peer show --nid "$prim"
	got=$(awk '$1 == "-" && $2 == "nid:" { printf "%s%s", sep, $3; sep = " " }' "$T/out")
	CHECKS=$((CHECKS + 1))
	[[ $got == "$want" ]] || fail "peer $prim: NIDs '$got', want '$want'"
}
# count_nids N: the last "peer show" lists N peer NIs
count_nids() {
	local got
	got=$(awk '$1 == "-" && $2 == "nid:" { n++ } END { print n + 0 }' "$T/out")
	CHECKS=$((CHECKS + 1))
	[[ $got == "$1" ]] || fail "'$LAST' lists $got peer NIs, want $1"
}
# gone PRIMARY: no peer has that NID
gone() {
	run P 234 peer show --nid "$1"
}

ul_daemon P --accept-port "$PORT" --accept all || { echo "FAIL: ulnetd did not start"; exit 1; }

# --- peer add / del with ranges (sanity-lnet 4, 5, 8, 12, 21, 24) ----------------
run P 0 peer add --prim_nid 4.4.4.4@tcp --nid '4.4.4.[1-3]@tcp'
nids 4.4.4.4@tcp "4.4.4.4@tcp 4.4.4.1@tcp 4.4.4.2@tcp 4.4.4.3@tcp"
# again, overlapping the primary and the NIDs it has: nothing changes
run P 0 peer add --prim_nid 4.4.4.4@tcp --nid '4.4.4.[1-4]@tcp'
nids 4.4.4.4@tcp "4.4.4.4@tcp 4.4.4.1@tcp 4.4.4.2@tcp 4.4.4.3@tcp"
# a Multi-Rail mismatch with the existing peer is refused
run P 234 peer add --prim_nid 4.4.4.4@tcp --nid 4.4.4.9@tcp --non_mr
nids 4.4.4.4@tcp "4.4.4.4@tcp 4.4.4.1@tcp 4.4.4.2@tcp 4.4.4.3@tcp"
run P 0 peer del --prim_nid 4.4.4.4@tcp --nid '4.4.4.[2,3]@tcp'
nids 4.4.4.4@tcp "4.4.4.4@tcp 4.4.4.1@tcp"
# comma lists inside brackets, steps, several ranged fields
run P 0 peer add --prim_nid 12.12.12.12@o2ib \
	--nid '[13-14/1].[13-15/2].13.13@o2ib,[15-16/3].[17-19/4].[1].[5-20/5]@tcp'
nids 12.12.12.12@o2ib "12.12.12.12@o2ib 13.13.13.13@o2ib 13.15.13.13@o2ib 14.13.13.13@o2ib 14.15.13.13@o2ib 15.17.1.5@tcp 15.17.1.10@tcp 15.17.1.15@tcp 15.17.1.20@tcp"
run P 0 peer del --prim_nid 12.12.12.12@o2ib --nid 13.15.13.13@o2ib,15.17.1.15@tcp
nids 12.12.12.12@o2ib "12.12.12.12@o2ib 13.13.13.13@o2ib 14.13.13.13@o2ib 14.15.13.13@o2ib 15.17.1.5@tcp 15.17.1.10@tcp 15.17.1.20@tcp"
run P 0 peer del --prim_nid 12.12.12.12@o2ib
gone 12.12.12.12@o2ib
# a peer's NIDs are grouped by net, the primary's net first (sanity-lnet 24)
run P 0 peer add --prim_nid 24@gni --nid '13.13.13.13@o2ib,15.17.1.5@tcp,[5-12/6]@gni'
nids 24@gni "24@gni 5@gni 11@gni 13.13.13.13@o2ib 15.17.1.5@tcp"
# the primary among the NIDs to delete: the whole peer (sanity-lnet 7)
run P 0 peer del --prim_nid 24@gni --nid '[5-11/6]@gni,24@gni'
gone 24@gni
gone 5@gni
# getopt_long's unique prefixes: --prim is --prim_nid; --n is ambiguous
run P 0 peer add --prim 1.1.1.1@tcp --nid '1.1.1.1@tcp,2.2.2.2@tcp'
nids 1.1.1.1@tcp "1.1.1.1@tcp 2.2.2.2@tcp"
run P 234 peer add --prim_nid 1.1.1.1@tcp --n 3.3.3.3@tcp
has err "option '--n' is ambiguous; possibilities: '--nid' '--non_mr'"
run P 0 peer del --prim 1.1.1.1@tcp
# more than 16 NIDs are all shown: 129 in one list (lnetctl's most)
run P 0 peer add --prim_nid 6.6.6.6@tcp --nid '6.6.[0-1].[1-64]@tcp,6.6.2.1@tcp'
run P 0 peer show --nid 6.6.6.6@tcp
count_nids 130
has out "nid: 6.6.2.1@tcp"
run P 0 export --backup
has out "nid: 6.6.2.1@tcp"
run P 0 peer del --prim_nid 6.6.6.6@tcp

# --- bad lists: lnetctl's texts, exit 234, the item at fault named ------------------
run P 234 peer add --prim_nid 6.6.6.6@tcp --nid '1.1.1.1@tcp,6.6.6.[3-1]@tcp'
has out "can't parse nidrange: \"6.6.6.[3-1]@tcp\""
has err "errno: -34"
has err "Unable to parse nidlist: range is wrong order"
gone 6.6.6.6@tcp
run P 234 peer add --prim_nid 6.6.6.6@tcp --nid '6.6.6.[1-300]@tcp'
has err "errno: -7"
has err "descr: ! \"Unable to parse nidlist: specifies more NIDs than allowed\""
run P 234 peer add --prim_nid 1.1.1.1@tcp --nid '1.1.1.[2-255]@tcp'
has err "errno: -7"
run P 234 peer add --prim_nid 1.1.1.1@tcp --nid '1.1.1.[2-4@tcp'
has out "can't parse nidrange: \"1.1.1.[2-4@tcp\""
has err "Unable to parse nidlist: incomplete bracket set"
run P 234 peer add --prim_nid 1.1.1.1@tcp --nid foobar
has err "Unable to parse nidlist: no valid NIDs in string"
run P 234 peer add --prim_nid 1.1.1.1@tcp --nid '1.1.1.*@tcp'
has err "asterisk not allowed in nidstring"
run P 234 peer del --prim_nid 1.1.1.1@tcp --nid '1.1.1.[5-]@tcp'
has err "Unable to parse nidlist: range needs number after -"
gone 1.1.1.1@tcp

# --- import: ranges in "peer ni", and --del of some NIDs (sanity-lnet 18a/18b) ----
run P 0 peer del --prim_nid 4.4.4.4@tcp
cat >"$T/add.yaml" <<'YAML'
peer:
    - primary nid: 1.1.1.1@tcp
      Multi-Rail: True
      peer ni:
        - nid: 1.1.1.1@tcp
        - nid: 2.2.2.2@tcp
        - nid: 4.4.4.[4-5]@tcp
        - nid: 3.3.3.3@o2ib
        - nid: "[5-9/4]@gni"
    - primary nid: 6.6.6.6@o2ib
      Multi-Rail: True
      peer ni:
        - nid: 6.6.6.6@o2ib
        - nid: 7.7.7.7@tcp
        - nid: 8.8.8.8@tcp
YAML
run P 0 import "$T/add.yaml"
nids 1.1.1.1@tcp "1.1.1.1@tcp 2.2.2.2@tcp 4.4.4.4@tcp 4.4.4.5@tcp 3.3.3.3@o2ib 5@gni 9@gni"
cat >"$T/del.yaml" <<'YAML'
peer:
    - primary nid: 1.1.1.1@tcp
      Multi-Rail: True
      peer ni:
        - nid: 2.2.2.2@tcp
        - nid: 3.3.3.3@o2ib
        - nid: 4.4.4.[5]@tcp
        - nid: "[5-9/4]@gni"
    - primary nid: 6.6.6.6@o2ib
      peer ni:
        - nid: 8.8.8.8@tcp
YAML
run P 0 import --del "$T/del.yaml"
nids 1.1.1.1@tcp "1.1.1.1@tcp 4.4.4.4@tcp"
nids 6.6.6.6@o2ib "6.6.6.6@o2ib 7.7.7.7@tcp"
# the primary NID among them, or no "peer ni": the whole peer
printf 'peer:\n    - primary nid: 1.1.1.1@tcp\n      peer ni:\n        - nid: 4.4.4.4@tcp\n        - nid: 1.1.1.1@tcp\n' >"$T/del2.yaml"
run P 0 import --del "$T/del2.yaml"
gone 1.1.1.1@tcp
gone 4.4.4.4@tcp
printf 'peer:\n    - primary nid: 6.6.6.6@o2ib\n' >"$T/del3.yaml"
run P 0 import --del "$T/del3.yaml"
gone 6.6.6.6@o2ib
# a NID of another peer: an error, nothing added
run P 0 peer add --prim_nid 5.5.5.5@tcp --nid 5.5.5.6@tcp
printf 'peer:\n    - primary nid: 1.1.1.1@tcp\n      peer ni:\n        - nid: 5.5.5.6@tcp\n' >"$T/add2.yaml"
run P 234 import "$T/add2.yaml"
has err "cannot add peer 1.1.1.1@tcp"
gone 1.1.1.1@tcp
nids 5.5.5.5@tcp "5.5.5.5@tcp 5.5.5.6@tcp"
run P 0 peer del --prim_nid 5.5.5.5@tcp
# a NID the peer does not have: an error, the peer as it was
run P 0 peer add --prim_nid 1.1.1.1@tcp --nid 2.2.2.2@tcp
printf 'peer:\n    - primary nid: 1.1.1.1@tcp\n      peer ni:\n        - nid: 2.2.2.2@tcp\n        - nid: 9.9.9.9@tcp\n' >"$T/del4.yaml"
run P 234 import --del "$T/del4.yaml"
has err "cannot del peer 1.1.1.1@tcp"
nids 1.1.1.1@tcp "1.1.1.1@tcp 2.2.2.2@tcp"
run P 0 peer del --prim_nid 1.1.1.1@tcp
# bad ranges in import: liblnetconfig's texts, the place in the file
printf 'peer:\n    - primary nid: 1.1.1.1@tcp\n      peer ni:\n        - nid: 1.1.1.[3-1]@tcp\n' >"$T/bad1.yaml"
run P 234 import "$T/bad1.yaml"
has err "$T/bad1.yaml:4:16: Unable to parse nidlist from: 1.1.1.[3-1]@tcp"
gone 1.1.1.1@tcp
printf 'peer:\n    - primary nid: 1.1.1.1@tcp\n      peer ni:\n        - nid: 1.1.[1-2].[1-65]@tcp\n' >"$T/bad2.yaml"
run P 234 import "$T/bad2.yaml"
has err "errno: -7"
has err "'1.1.[1-2].[1-65]@tcp' specifies more than the 128 NIDs allowed by this operation"
gone 1.1.1.1@tcp
printf 'peer:\n    - primary nid: 1.1.1.1@tcp\n      peer ni:\n        - nid: 1.1.1.*@tcp\n' >"$T/bad3.yaml"
run P 234 import "$T/bad3.yaml"
has err "asterisk not allowed in nidstring '1.1.1.*@tcp'"
# Multi-Rail is True or False (sanity-lnet 99b)
printf 'peer:\n    - primary nid: 99.99.99.99@tcp\n      Multi-Rail: Foobar\n' >"$T/bad4.yaml"
run P 234 import "$T/bad4.yaml"
has err "$T/bad4.yaml:3:19: Multi-Rail must be set to 'True' or 'False' found 'Foobar'"
gone 99.99.99.99@tcp
# 128 NIDs besides the primary are fine, and all kept (no cap at 16)
printf 'peer:\n    - primary nid: 1.1.1.1@tcp\n      peer ni:\n        - nid: 1.1.[1-2].[1-64]@tcp\n' >"$T/big.yaml"
run P 0 import "$T/big.yaml"
run P 0 peer show --nid 1.1.1.1@tcp
count_nids 128

echo "$CHECKS checks, $FAILS failures"
[[ $FAILS == 0 ]]
