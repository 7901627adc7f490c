/* SPDX-License-Identifier: MIT */
/*
 * kpeer.h - a scripted "kernel peer": replays one side of a captured
 * exchange between two kernel LNet nodes against a live ulnet node, over
 * real TCP sockets on 127.0.0.0/8.
 *
 * kpeer_load() turns a capture into a script: every acceptor request, HELLO
 * and ksock message of every connection, decoded with our codecs, in the
 * order the capture saw them (first packet of each message), each marked as
 * sent by the side kpeer plays or by the side ulnet plays. A capture that
 * starts after the handshakes gets the standard three handshakes
 * (CONTROL, BULK_IN, BULK_OUT, connector port 1023/1022/1021) made up.
 *
 * kpeer_run() plays it. kpeer is the capture's connector (active: it dials
 * ulnet's acceptor) or its listener (passive: ulnet dials it), exactly as
 * the side it plays was. Its own messages are re-encoded with the capture's
 * NIDs mapped to the live addresses (also inside ping infos) and with the
 * wire handles ulnet gave it echoed where the kernel echoed them; each is
 * sent once every earlier message of ulnet's side on that connection has
 * arrived. Each message ulnet sends is decoded and compared field by field
 * with the captured one; the first difference ends the run with a precise
 * message (kpeer_error()). Ignored: incarnations, the value of wire-handle
 * cookies ulnet makes (an echo of ours must be exact), ZC cookie values
 * (zero or not is compared), times, and the 0@lo status (a sequence number).
 * Among ulnet's unmatched messages of one kind and type on a connection, one
 * with the same match bits is taken first (two RPCs served at once may
 * answer in either order); otherwise the first.
 *
 * Two kpeers can play the two hops of a router at once (one thread each):
 * conf.map maps the far ends' NIDs as well, conf.forwarded makes every
 * handle exact, kpeer_run_to() orders their starts, and on_send/on_wait
 * let the test keep them in step on a common clock.
 *
 * Bounded: every wait has a deadline (conf.timeout_ms), every buffer and
 * loop a limit. Not thread-safe: one thread drives one kpeer (the test may
 * run kpeer_run() on a thread of its own with kpeer_run_async()).
 */
#ifndef ULNET_TEST_KPEER_H
#define ULNET_TEST_KPEER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/lnet_hdr.h"
#include "core/ping_info.h"
#include "lnd/socklnd/sock_wire.h"
#include "pcap.h"

#define KPEER_MAX_MSGS 512
#define KPEER_MAX_CONNS 16
#define KPEER_PI_MAX 16
#define KPEER_RBUF (64u << 10)
#define KPEER_SBUF_PAYLOAD (1u << 20)  /* largest payload kpeer sends */
#define KPEER_MAX_MAP 4

enum kpeer_kind { KP_CONNREQ, KP_HELLO, KP_NOOP, KP_LNET };

struct kpeer_msg {
	unsigned idx;              /* position in the script */
	enum kpeer_kind kind;
	unsigned cap_conn;         /* capture connection, 1-based (C1, C2...) */
	int ctype;                 /* the connection's type as its connector declared it */
	bool from_kpeer;           /* sent by the side kpeer plays */
	bool from_connector;
	bool synth;                /* made up: the capture began after the handshake */
	bool matched;              /* ulnet's side: received and compared */
	uint64_t order;            /* packet index * 2^16 + offset rank */
	double t;                  /* capture time, s */
	struct lnet_acceptor_req acr;
	struct ksock_hello hello;
	struct ksock_msg_hdr ksm;
	struct lnet_hdr hdr;
	const uint8_t *payload;    /* into the capture (hdr.payload_length bytes) */
	bool has_pi;
	struct lnet_ping_info pi;
	struct lnet_ping_ni pi_nis[KPEER_PI_MAX];
};

struct kpeer_conf {
	const char *pcap;          /* path of the capture */
	uint32_t cap_kpeer_ip;     /* capture IPv4 (host order) of the node kpeer plays */
	uint32_t cap_ulnet_ip;     /* ... and of the node ulnet plays */
	uint32_t kpeer_ip;         /* live addresses (host order, 127.0.0.0/8) */
	uint32_t ulnet_ip;
	uint16_t port;             /* the acceptor port of both nodes */
	bool kpeer_privileged;     /* bind source ports 1023 down, as the kernel */
	bool ulnet_userspace;      /* ulnet has no privileged ports: PID | 0x80000000 */
	int timeout_ms;            /* per wait; 0: 5000 */
	int quiet_ms;              /* after the script, nothing more may come; 0: 300 */
	unsigned limit;            /* play script[0 .. limit); 0: all */
	/* Called once before kpeer starts waiting for ulnet's message `m`
	 * (for example to move ulnet's clock forward); timeout_ms counts from
	 * its return. */
	void (*on_wait)(void *arg, const struct kpeer_msg *m);
	void *arg;
	bool verbose;              /* transcript on stderr (also env KPEER_VERBOSE) */
	/* LNet selftest traffic: ulnet's PUTs to portal 52 are compared as
	 * SRPC replies (decoded, field by field; of a STAT reply the session's
	 * running time and the LNet counters, which are the node's own, are
	 * not compared) or, when they carry no SRPC message, as brw read bulk
	 * (the pattern words at both ends of every 4096-byte page must be the
	 * kernel's; the bytes between are leftovers of earlier RPCs in the
	 * kernel's pages). Off: every payload is compared byte for byte. */
	bool srpc;
	/* Traffic outside the capture that ulnet may send at any time, such
	 * as its router checker's ping of a gateway, which a capture made
	 * after that phase lacks: an LNet message from ulnet for which
	 * `aside` returns true is not matched against the script but counted
	 * in kpeer.aside (and not answered). NULL: every message is matched. */
	bool (*aside)(void *arg, int ctype, const struct lnet_hdr *h);
	void *aside_arg;
	/* More nodes of the capture whose NIDs are mapped (capture IPv4 ->
	 * live IPv4, host order), beside the two above. A router test needs
	 * them: ulnet, the router, must reach each hop's far end, which the
	 * kpeer of the other hop plays at its live address, so the end-to-end
	 * NIDs in LNet headers and ping infos are mapped on both hops alike.
	 * NIDs of nodes not listed stay as captured. Every mapped NID keeps
	 * its captured net (192.168.77.141@tcp1 -> 127.0.1.x@tcp1). */
	struct { uint32_t cap_ip, live_ip; } map[KPEER_MAX_MAP];
	unsigned nmap;
	/* ulnet is the router and forwards everything it sends on this hop:
	 * the wire handles and ping infos are the other hop's kpeer's, which
	 * sends them as captured, so each handle must be the captured one
	 * (not just echoed consistently) and a ping info's 0@lo sequence
	 * number is compared too. */
	bool forwarded;
	/* Called once before kpeer sends script message `m`, after what it
	 * waited for came (for example to move ulnet's clock to the
	 * capture's time of `m`); `arg` as for on_wait. */
	void (*on_send)(void *arg, const struct kpeer_msg *m);
	/* Keepalives are not compared: the capture's keepalive NOOPs [0,1]
	 * from ulnet's side leave the script, and ulnet's are set aside
	 * (counted in kpeer.aside_keepalives). For a test that moves ulnet's
	 * clock in big steps (minutes of a capture in a second), where when
	 * a keepalive falls due is not the capture's; test_idle_keepalive
	 * checks keepalives. kpeer's own keepalives are still sent. */
	bool aside_keepalive;
};

struct kp_conn;

struct kpeer {
	struct kpeer_conf conf;
	struct pcap_capture cap;
	struct kpeer_msg *msgs;    /* the script */
	unsigned nmsgs;
	unsigned pos;              /* next script message to play (kpeer_run_to) */
	unsigned cap_nconns;
	double cap_t0;             /* capture time of its first record (kpeer_msg.t is
				    * relative to it): s since the epoch */
	ulnet_net_t net;           /* the hop's net: that of kpeer's node in the capture */
	int lfd;                   /* listener (passive) */
	struct kp_conn *conns;
	unsigned nconns;
	uint64_t incarnation;      /* ours */
	uint64_t ulnet_incarnation;
	bool have_ulnet_inc;
	uint16_t next_port;        /* privileged source port countdown */
	/* capture wire handle -> live wire handle */
	struct { lnet_wire_handle_t cap, live; } wmd[64];
	unsigned nwmd;
	unsigned received;         /* ulnet messages received and matched */
	unsigned aside;            /* ulnet messages set aside (conf.aside) */
	unsigned aside_keepalives; /* ulnet keepalives set aside (conf.aside_keepalive) */
	char err[512];             /* first difference or failure */
	char notes[1024];          /* expected differences (user-space PIDs...) */
	pthread_t thr;
	bool thr_started;
	int thr_rc;
};

/* Load and decode a capture; 0 or -1 with kpeer_error() set. */
int kpeer_load(struct kpeer *kp, const struct kpeer_conf *conf);
/* Passive: listen on kpeer_ip:port (call before ulnet dials). Active: no-op. */
int kpeer_start(struct kpeer *kp);
/* Play the script (from the capture's start to conf.limit), then wait until
 * every message of ulnet's side has come and quiet_ms more.
 * Returns 0, or -1 with kpeer_error() set. */
int kpeer_run(struct kpeer *kp);
/* Play the script up to (not including) message `upto` and wait for
 * ulnet's messages before it, then return (no quiet wait): a later
 * kpeer_run() or kpeer_run_to() goes on from there. Two kpeers that play
 * the two hops of a router use it to order their starts (the far end's
 * connections up before the first message that ulnet forwards to it).
 * 0, or -1 with kpeer_error() set. */
int kpeer_run_to(struct kpeer *kp, unsigned upto);
/* kpeer_run() on a thread; kpeer_join() returns its result. */
int kpeer_run_async(struct kpeer *kp);
int kpeer_join(struct kpeer *kp);
const char *kpeer_error(const struct kpeer *kp);
const char *kpeer_notes(const struct kpeer *kp);
/* Release sockets and the capture. */
void kpeer_close(struct kpeer *kp);

/* Index of the first script message satisfying `pred` after `from`, or -1. */
int kpeer_find(const struct kpeer *kp, unsigned from,
	       bool (*pred)(const struct kpeer_msg *m, void *arg), void *arg);
/* One line describing a message ("msg 7 C1 ulnet->kpeer LNET GET ..."). */
void kpeer_describe(const struct kpeer *kp, const struct kpeer_msg *m, char *buf, size_t len);

/* After the script: send a NOOP [c0, c1] on the live connection whose
 * connector type is `ctype`; 0 or -1. */
int kpeer_send_noop(struct kpeer *kp, int ctype, uint64_t c0, uint64_t c1);
/* Send an LNet message (header NIDs/PIDs as given) on connection `ctype`. */
int kpeer_send_lnet(struct kpeer *kp, int ctype, const struct lnet_hdr *h,
		    const void *payload);
/* Wait up to `ms`: 0 if ulnet sent nothing and closed nothing, else -1 with
 * the reason in kpeer_error(). */
int kpeer_expect_quiet(struct kpeer *kp, int ms);
/* Wait up to `ms` for one ksock message from ulnet on any connection; on
 * success *ctype is its connection's connector type. 0, or -1. */
int kpeer_recv_msg(struct kpeer *kp, int ms, int *ctype, struct ksock_msg_hdr *ksm,
		   struct lnet_hdr *hdr);

/* Live NID on the tcp net for a host-order IPv4. */
ulnet_nid_t kpeer_tcp_nid(uint32_t ip);

#endif
