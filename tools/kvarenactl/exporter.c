// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl exporter - the metrics of `kvarenactl metrics` served over
 * HTTP at /metrics, for Prometheus to scrape.
 *
 * HTTP is libmicrohttpd's (Debian's libmicrohttpd-dev): one thread of its
 * own answers every connection in turn, and each GET /metrics reads the
 * arenas afresh (STAT and CLIENTS, as `metrics` does) on a descriptor
 * opened for that scrape and closed after it, so that a running exporter
 * never keeps kvarena.ko from being unloaded.  The device is checked once
 * at start (a wrong node or ABI fails there, said as every command says
 * it); a scrape that cannot read it later answers kvarena_up 0 and the
 * exporter says why on its standard error, once per change.
 *
 * Clients are summed per label by default (kvactl_print_metrics()):
 * client ids and pids are new with every restart of an engine, a series
 * each in Prometheus's database; --per-client gives one series per
 * client as `metrics` does.
 *
 * Without libmicrohttpd (the statically linked build) the command says
 * that it is missing.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvarenactl.h"

#ifndef KVACTL_MHD

int kvactl_cmd_exporter(const struct kvactl_opts *o)
{
	kvactl_err("exporter: this kvarenactl was built without libmicrohttpd (build it with libmicrohttpd-dev installed)");
	return KVACTL_FAIL;
}

#else

#include <pthread.h>
#include <microhttpd.h>

#define TEXT_FORMAT	"text/plain; version=0.0.4; charset=utf-8"
#define CONN_LIMIT	32		/* connections at once */
#define CONN_TIMEOUT	30		/* seconds a connection may idle */

struct exporter {
	const struct kvactl_opts *o;
	pthread_mutex_t lock;		/* the fields below */
	char last_err[512];		/* the last scrape's failure, or "" */
	char *err_buf;			/* kvactl_err's message, in a scrape */
	uint64_t served;		/* /metrics answered */
	bool done;			/* -n COUNT served */
};

static struct exporter *the_exporter;

/* In a scrape, kvactl_err's messages are kept, not printed. */
static void keep_err(const char *msg)
{
	struct exporter *e = the_exporter;

	if (e->err_buf && !e->err_buf[0])
		snprintf(e->err_buf, sizeof(e->last_err), "%s", msg);
}

/* A change from the last scrape is said, once: failing, or back. */
static void say_change(struct exporter *e, const char *err)
{
	if (!strcmp(err, e->last_err))
		return;
	if (err[0])
		fprintf(stderr, KVACTL_PROG ": exporter: %s; answering kvarena_up 0\n",
			err);
	else
		fprintf(stderr, KVACTL_PROG ": exporter: the device answers again\n");
	fflush(stderr);
	snprintf(e->last_err, sizeof(e->last_err), "%s", err);
}

static void print_up(FILE *f, bool up)
{
	fputs("# HELP kvarena_up 1 if this scrape read kvarena.ko's figures, 0 if it could not (the exporter's log says why).\n"
	      "# TYPE kvarena_up gauge\n", f);
	fprintf(f, "kvarena_up %d\n", up);
}

/* The body of one scrape, malloc()ed, in *@body (NULL if out of memory). */
static size_t scrape(struct exporter *e, char **body)
{
	const char *name = e->o->nargs ? e->o->args[0] : NULL;
	char err[sizeof(e->last_err)] = "";
	struct kvactl_snap snap;
	bool up = false;
	size_t len = 0;
	FILE *f;
	int fd;

	*body = NULL;
	f = open_memstream(body, &len);
	if (!f)
		return 0;
	e->err_buf = err;
	kvactl_err_hook = keep_err;
	fd = kvactl_open(false, "exporter");
	if (fd >= 0) {
		if (!kvactl_snap_read(fd, "exporter", name, true, &snap)) {
			up = true;
			print_up(f, true);
			kvactl_print_metrics(f, &snap, !e->o->per_client);
			kvactl_snap_free(&snap);
		}
		close(fd);
	}
	kvactl_err_hook = NULL;
	e->err_buf = NULL;
	if (!up)
		print_up(f, false);
	say_change(e, up ? "" : err[0] ? err : "the device could not be read");
	if (fclose(f)) {
		free(*body);
		*body = NULL;
		return 0;
	}
	return len;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned int status,
			       const char *type, char *body, size_t len,
			       bool allow)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond_text(struct MHD_Connection *conn,
				    unsigned int status, const char *text,
				    bool allow)
{
	char *body = strdup(text);

	if (!body)
		return MHD_NO;
	return respond(conn, status, "text/plain; charset=utf-8", body,
		       strlen(body), allow);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **state)
{
	struct exporter *e = cls;
	enum MHD_Result ret;
	char *body;
	size_t len;

	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "Only GET and HEAD.\n", true);
	/* A GET with a body: wait for it all, then answer. */
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (!strcmp(url, "/"))
		return respond_text(conn, MHD_HTTP_OK,
				    "kvarenactl exporter: the metrics are at /metrics\n",
				    false);
	if (strcmp(url, "/metrics"))
		return respond_text(conn, MHD_HTTP_NOT_FOUND,
				    "Not found: the metrics are at /metrics\n",
				    false);

	pthread_mutex_lock(&e->lock);
	len = scrape(e, &body);
	if (!body) {
		pthread_mutex_unlock(&e->lock);
		return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "Out of memory.\n", false);
	}
	ret = respond(conn, MHD_HTTP_OK, TEXT_FORMAT, body, len, false);
	e->served++;
	if (e->o->iterations && e->served >= e->o->iterations)
		e->done = true;
	pthread_mutex_unlock(&e->lock);
	return ret;
}

/*
 * --listen: PORT, :PORT (every address), HOST:PORT or [IPV6]:PORT, into
 * @ss.  cmdline.c has checked its form; the host is resolved here.
 */
static int listen_addr(const char *spec, struct sockaddr_storage *ss,
		       socklen_t *sslen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	char host[256] = "", port[16];
	struct addrinfo *ai;
	const char *colon;
	int err;

	colon = strrchr(spec, ':');
	if (!colon) {
		snprintf(port, sizeof(port), "%s", spec);
	} else {
		size_t hl = colon - spec;

		snprintf(port, sizeof(port), "%s", colon + 1);
		if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
			spec++;
			hl -= 2;
		}
		if (hl >= sizeof(host))
			return EAI_NONAME;
		memcpy(host, spec, hl);
		host[hl] = 0;
	}
	/* No host: every address, IPv6 and IPv4 where the machine has both. */
	hints.ai_family = host[0] ? AF_UNSPEC : AF_INET6;
	err = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (err == EAI_ADDRFAMILY || err == EAI_FAMILY ||
	    (err && !host[0])) {
		hints.ai_family = AF_INET;
		err = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	}
	if (err)
		return err;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*sslen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void fmt_url(char *buf, size_t len, const struct sockaddr_storage *ss,
		    uint16_t port)
{
	char host[NI_MAXHOST];

	if (getnameinfo((const struct sockaddr *)ss, sizeof(*ss), host,
			sizeof(host), NULL, 0, NI_NUMERICHOST))
		snprintf(host, sizeof(host), "?");
	snprintf(buf, len, ss->ss_family == AF_INET6 ? "http://[%s]:%u/metrics" :
		 "http://%s:%u/metrics", host, port);
}

int kvactl_cmd_exporter(const struct kvactl_opts *o)
{
	struct exporter e = { .o = o, .lock = PTHREAD_MUTEX_INITIALIZER };
	const char *spec = o->listen ? o->listen : KVACTL_EXPORTER_LISTEN;
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage ss = { 0 };
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	struct MHD_Daemon *d;
	socklen_t sslen;
	sigset_t sigs;
	char url[128];
	int fd, err;

	/* The device is there and speaks our ABI, or nothing is served. */
	fd = kvactl_open(false, o->cmd);
	if (fd < 0)
		return KVACTL_FAIL;
	close(fd);

	err = listen_addr(spec, &ss, &sslen);
	if (err) {
		kvactl_err("exporter: --listen %s: %s", spec, gai_strerror(err));
		return KVACTL_FAIL;
	}
	if (ss.ss_family == AF_INET6) {
		flags |= MHD_USE_IPv6;
		/* No host given: IPv4 too, on the same socket. */
		if (IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&ss)->sin6_addr))
			flags |= MHD_USE_DUAL_STACK;
	}

	/* SIGINT and SIGTERM end it: waited for here, blocked in MHD's thread. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	the_exporter = &e;
	d = MHD_start_daemon(flags, 0, NULL, NULL, answer, &e,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONN_LIMIT,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONN_TIMEOUT,
			     MHD_OPTION_END);
	if (!d) {
		kvactl_err("exporter: cannot serve on %s: %s", spec,
			   errno ? strerror(errno) : "libmicrohttpd refused");
		return KVACTL_FAIL;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fmt_url(url, sizeof(url), &ss, info ? info->port : 0);
	printf("kvarenactl exporter: serving %s\n", url);
	fflush(stdout);

	/* -n COUNT: look every 50 ms whether that many were served. */
	for (;;) {
		struct timespec tick = { 0, 50 * 1000 * 1000 };
		int sig;

		if (o->iterations) {
			sig = sigtimedwait(&sigs, NULL, &tick);
			if (sig < 0) {
				bool done;

				pthread_mutex_lock(&e.lock);
				done = e.done;
				pthread_mutex_unlock(&e.lock);
				if (done)
					break;
				continue;
			}
		} else if (sigwait(&sigs, &sig)) {
			continue;
		}
		if (sig == SIGINT || sig == SIGTERM)
			break;
	}
	MHD_stop_daemon(d);
	return KVACTL_OK;
}

#endif /* KVACTL_MHD */
