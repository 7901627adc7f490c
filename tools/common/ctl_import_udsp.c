/* SPDX-License-Identifier: MIT */
/*
 * ctl_import_udsp.c - the `udsp:` section of an import: each rule added
 * or deleted as `udsp add|del` does (ctl_cmds_udsp.c).
 */
#include "ctl_import_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A udsp entry, as export writes it (idx, src, dst, rte, action: priority)
 * or lnetctl's import reads it (priority also at the top of the entry).
 * --add adds the rule at its idx (appended without one) as "udsp add"
 * does, with its checks and texts; a rule that is there already is no
 * error (importing an export again changes nothing). --del deletes the
 * rule with the same src, dst and rte, wherever it is now (lnetctl
 * deletes by idx, which the deletions before shift). Any other key is
 * refused.
 */
void imp_udsp(struct imp *im, yaml_node_t *e)
{
	const char *match[ULNET_UDSP_NPARTS] = { NULL, NULL, NULL };
	yaml_node_t *prio_n = NULL;
	long idx = -1, prio = 0;
	char descr[400];
	int rc;

	if (!e || e->type != YAML_MAPPING_NODE) {
		imp_error(im, e, -EINVAL, "udsp entry must be a mapping");
		return;
	}
	for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = ynode(im, p->key), *vn = ynode(im, p->value);
		const char *k = yscalar(kn);
		int i = imp_key_find(IMPS_UDSP, k);

		_Static_assert((int)IK_UDSP_SRC == (int)ULNET_UDSP_SRC &&
			       (int)IK_UDSP_DST == (int)ULNET_UDSP_DST &&
			       (int)IK_UDSP_RTE == (int)ULNET_UDSP_RTE, "udsp: src, dst, rte are the match parts");
		if (i < 0) {
			imp_error(im, kn, -EOPNOTSUPP, "unknown udsp key '%s'", k ? k : "?");
			return;
		}
		if (i < ULNET_UDSP_NPARTS) {
			if (!yscalar(vn)) {
				imp_bad_value(im, vn, k);
				return;
			}
			match[i] = yscalar(vn);
		} else if (i == IK_UDSP_IDX) {
			if (yint(vn, &idx) < 0 || idx < 0) {
				imp_error(im, vn, -EINVAL, "invalid value for 'idx' (0 or more)");
				return;
			}
		} else if (i == IK_UDSP_PRIORITY) {
			prio_n = vn;
		} else {
			/* action: a mapping of "priority" alone */
			if (!vn || vn->type != YAML_MAPPING_NODE) {
				imp_error(im, vn, -EINVAL, "'action' must be a mapping");
				return;
			}
			for (yaml_node_pair_t *a = vn->data.mapping.pairs.start; a < vn->data.mapping.pairs.top; a++) {
				const char *ak = yscalar(ynode(im, a->key));

				if (imp_key_find(IMPS_UDSP_ACTION, ak) != IK_UACT_PRIORITY) {
					imp_error(im, ynode(im, a->key), -EOPNOTSUPP, "unknown udsp action '%s'",
						  ak ? ak : "?");
					return;
				}
				prio_n = ynode(im, a->value);
			}
		}
	}
	if (prio_n && (yint(prio_n, &prio) < 0 || prio < 0 || prio >= (long)ULNET_UDSP_PRIO_NONE)) {
		imp_error(im, prio_n, -EINVAL, "invalid value for 'priority' (0 to %u)",
			  ULNET_UDSP_PRIO_NONE - 1);
		return;
	}
	if (im->mode == IMP_DEL) {
		struct ulnet_udsp_rule rule;

		memset(&rule, 0, sizeof(rule));
		rule.action = ULNET_UDSP_ACTION_PRIORITY;
		for (int p = 0; p < ULNET_UDSP_NPARTS; p++)
			if (match[p])
				snprintf(rule.match[p], sizeof(rule.match[p]), "%s", match[p]);
		rc = ulnet_udsp_find(im->ctx->ln, &rule);
		if (rc == -EOPNOTSUPP) {
			/* a pair: only the descriptors count, not the action */
			rule.action = ULNET_UDSP_ACTION_PREFERRED;
			rc = ulnet_udsp_find(im->ctx->ln, &rule);
		}
		if (rc >= 0)
			rc = ulnet_udsp_del(im->ctx->ln, rc);
		if (rc < 0)
			imp_error(im, e, rc, "cannot del udsp: %s",
				  rc == -ENOENT ? "no such rule" : "bad src, dst or rte");
		return;
	}
	rc = ctl_udsp_add(im->ctx->ln, match, prio_n != NULL, prio, idx, descr, sizeof(descr));
	if (rc && rc != EALREADY) {
		size_t dl = strlen(descr);

		/* descr is lnetctl's, quotes included */
		if (dl >= 2 && descr[0] == '"' && descr[dl - 1] == '"') {
			descr[dl - 1] = '\0';
			memmove(descr, descr + 1, dl - 1);
		}
		imp_error(im, e, rc < 0 ? rc : -rc, "%s", descr);
	}
}
