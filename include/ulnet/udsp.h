/* SPDX-License-Identifier: MIT */
/*
 * ulnet/udsp.h - User Defined Selection Policies (lnetctl udsp add/del/show),
 * as kernel LNet 2.17 has them.
 *
 * A rule matches LNet constructs with up to three descriptors, each a net
 * ("tcp", "tcp1", "tcp[1-3]") or a NID range in ip2nets syntax
 * ("192.168.1.[1-10/2]@tcp", "[5-9]@gni"); a net without a number ("tcp")
 * matches net number 0 only, as the kernel's. What a rule does depends on
 * which descriptors it has:
 *
 *   src            priority of our nets ("net priority" of each NI on a
 *                  matching net) or of our NIs ("nid priority");
 *   dst            priority of peer nets or of peer NIs;
 *   src + dst      peer NIs matching dst prefer our NIs matching src
 *                  ("Preferred source NIDs");
 *   dst + rte      peer NIs matching dst are reached through the gateways
 *                  whose primary NID matches rte ("Preferred gateway NIDs").
 *
 * Priority 0 is the highest; a construct no rule names has none
 * (ULNET_UDSP_PRIO_NONE, shown as -1). Where several rules match one
 * construct, the first in the list (lowest index) wins. Selection uses
 * them in the kernel's order (docs/core.md, "Selection policies"). Rules
 * apply to what exists when they are added and to every NI, peer NI and
 * route added later; a deleted rule's effect goes at once.
 */
#ifndef ULNET_UDSP_H
#define ULNET_UDSP_H

#include "ulnet/export.h"

#include <stdint.h>

#include "ulnet/ulnet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A descriptor's text, NUL included (given, and as shown). */
#define ULNET_UDSP_STR_MAX 256
/* The priority of a construct no rule names (the kernel's UINT_MAX). */
#define ULNET_UDSP_PRIO_NONE UINT32_MAX

enum ulnet_udsp_part { ULNET_UDSP_SRC, ULNET_UDSP_DST, ULNET_UDSP_RTE, ULNET_UDSP_NPARTS };

enum ulnet_udsp_action {
	ULNET_UDSP_ACTION_PRIORITY = 1,  /* src or dst alone */
	ULNET_UDSP_ACTION_PREFERRED = 2, /* src + dst, dst + rte */
};

struct ulnet_udsp_rule {
	/* ULNET_UDSP_SRC, _DST, _RTE: a descriptor, or "" where absent */
	char match[ULNET_UDSP_NPARTS][ULNET_UDSP_STR_MAX];
	enum ulnet_udsp_action action;
	uint32_t priority;           /* ULNET_UDSP_ACTION_PRIORITY: 0 highest */
};

/* Why ulnet_udsp_add() refused a rule. */
struct ulnet_udsp_err {
	int part;                    /* the descriptor at fault, or -1 */
	struct ulnet_parse_err parse;/* what in it, and where (msg: why) */
};

/*
 * Add `rule` at position `idx` (0 first; negative, or past the end:
 * appended). A rule whose descriptors equal an existing rule's is not
 * added: a priority rule with another priority updates that rule's
 * priority (0), anything else is -EALREADY. Errors:
 *  -EINVAL      no descriptor, src with rte, an unknown action, or a
 *               descriptor that does not parse (err->part names it);
 *  -EOPNOTSUPP  a rule the kernel would keep and never apply: rte without
 *               dst, a priority on src + dst or dst + rte, a preferred
 *               list on src or dst alone, or a net alone as src of
 *               src + dst or as rte (they are matched against NIDs only);
 *               err->parse.msg names it ("rte without dst");
 *  -EALREADY, -ENOMEM.
 */
ULNET_API int ulnet_udsp_add(ulnet_t *ln, const struct ulnet_udsp_rule *rule, int idx,
		   struct ulnet_udsp_err *err);

/* The checks of ulnet_udsp_add() without an instance: 0 or its errors
 * (but -EALREADY). */
ULNET_API int ulnet_udsp_check(const struct ulnet_udsp_rule *rule, struct ulnet_udsp_err *err);

/* The index of the rule whose descriptors equal `rule`'s (compared in
 * canonical form; the action is not compared). Errors: -ENOENT (none),
 * those of ulnet_udsp_check(). */
ULNET_API int ulnet_udsp_find(ulnet_t *ln, const struct ulnet_udsp_rule *rule);

/* Delete the rule at `idx`, or every rule with `idx` negative (0 then
 * even with none). The constructs it set go back to what the remaining
 * rules give them. Errors: -ENOENT (no rule at idx). */
ULNET_API int ulnet_udsp_del(ulnet_t *ln, int idx);

/* The rule at `idx`, its descriptors in canonical form (as lnetctl shows
 * them: "192.168.1.[1-10/2]@tcp"). Errors: -ENOENT past the last. */
ULNET_API int ulnet_udsp_get(ulnet_t *ln, int idx, struct ulnet_udsp_rule *rule);

/* How many rules there are. */
ULNET_API int ulnet_udsp_count(ulnet_t *ln);

#ifdef __cplusplus
}
#endif

#endif
