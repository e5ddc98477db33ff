/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operator console: testpmd's command names and behaviour on librte_cmdline.
 * A wrong command never ends the console: librte_cmdline answers "Command not found"
 * or "Bad arguments", and a wrong value (an unknown CID, a burst out of range, a word
 * where a number belongs) gets a sentence saying what is expected.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_string.h>
#include <cmdline_rdline.h>
#include <cmdline_socket.h>

#include <vsock_pmd.h>

#include "args.h"
#include "console.h"
#include "display.h"

#define PROMPT "vsock> "

struct console {
	struct cmdline *cl;
	bool quit;
};

/* Every command parses into this: up to four words. */
struct words {
	cmdline_fixed_string_t w[4];
};

#define WORD(i, s) TOKEN_STRING_INITIALIZER(struct words, w[i], s)

/*
 * A value: any word is taken, and the command says what it expects when the word is wrong
 * (a token that refused it would only get "Bad arguments", and two tokens that both take it
 * would make the line ambiguous). Tab offers the fixed choices, "?" shows the help.
 */
struct value_token {
	cmdline_parse_token_string_t s;	/* first: cmdline_parse_string() reads it */
	const char *const *choices;	/* NULL-terminated, may be NULL */
	const char *help;
};

static int value_nb(cmdline_parse_token_hdr_t *tk)
{
	const struct value_token *v = (const struct value_token *)tk;
	int n = 0;

	while (v->choices && v->choices[n])
		n++;
	return n;
}

static int value_elt(cmdline_parse_token_hdr_t *tk, int idx, char *buf, unsigned int size)
{
	const struct value_token *v = (const struct value_token *)tk;

	if (idx < 0 || idx >= value_nb(tk) || strlen(v->choices[idx]) >= size)
		return -1;
	strcpy(buf, v->choices[idx]);
	return 0;
}

static int value_help(cmdline_parse_token_hdr_t *tk, char *buf, unsigned int size)
{
	snprintf(buf, size, "%s", ((const struct value_token *)tk)->help);
	return 0;
}

static struct cmdline_token_ops value_ops = {
	.parse = cmdline_parse_string,
	.complete_get_nb = value_nb,
	.complete_get_elt = value_elt,
	.get_help = value_help,
};

#define VALUE(i, ch, h) { \
	.s = { { &value_ops, offsetof(struct words, w[i]) }, { NULL } }, \
	.choices = (ch), .help = (h), \
}

static const char *const all_choice[] = { "all", NULL };
static const char *const on_off[] = { "on", "off", NULL };

static cmdline_parse_token_string_t t_help = WORD(0, "help");
static cmdline_parse_token_string_t t_show = WORD(0, "show");
static cmdline_parse_token_string_t t_clear = WORD(0, "clear");
static cmdline_parse_token_string_t t_set = WORD(0, "set");
static cmdline_parse_token_string_t t_start = WORD(0, "start");
static cmdline_parse_token_string_t t_stop = WORD(0, "stop");
static cmdline_parse_token_string_t t_quit = WORD(0, "quit");
static cmdline_parse_token_string_t t_vm = WORD(1, "vm");
static cmdline_parse_token_string_t t_lcore = WORD(1, "lcore");
static cmdline_parse_token_string_t t_conn = WORD(1, "conn");
static cmdline_parse_token_string_t t_config = WORD(1, "config");
static cmdline_parse_token_string_t t_stats1 = WORD(1, "stats");
static cmdline_parse_token_string_t t_burst = WORD(1, "burst");
static cmdline_parse_token_string_t t_rec = WORD(1, "record-burst-stats#record-core-cycles");
static cmdline_parse_token_string_t t_stats2 = WORD(2, "stats");
static struct value_token t_vm_sel = VALUE(3, all_choice, "all|<cid>");
static struct value_token t_clear_sel = VALUE(2, all_choice, "all|<cid>");
static struct value_token t_cid = VALUE(2, NULL, "<cid>");
static struct value_token t_conn_start = VALUE(3, NULL, "<start>: first row shown, from 0");
static struct value_token t_burst_n = VALUE(2, NULL, "<n>: 1..512");
static struct value_token t_on_off = VALUE(2, on_off, "on|off");

static struct console *the_console;

static void done(void)
{
	fflush(stdout);
}

static void cmd_help(void *res __rte_unused, struct cmdline *cl __rte_unused,
		     void *data __rte_unused)
{
	printf("Commands (Tab completes, Up/Down recall):\n"
	       "  show vm stats all|<cid>          VM counters, throughput since last show\n"
	       "  show lcore stats                 polls, busy share, cycles per packet\n"
	       "  show conn <cid> [<start>]        connections, %u a page: ports, state, bytes\n"
	       "  show config                      lcores, VMs, which lcore polls which VM\n"
	       "  clear stats all|<cid>            restart the counters from zero\n"
	       "  set burst <n>                    packets per queue per poll, 1..%u, at once\n"
	       "  set record-burst-stats on|off    count bursts by size\n"
	       "  set record-core-cycles on|off    measure CPU cycles per packet\n"
	       "  stop                             pause polling (rings keep their descriptors)\n"
	       "  start                            resume polling\n"
	       "  quit                             stop everything and exit\n",
	       DISPLAY_CONNS_PAGE, VSOCK_PMD_BURST_MAX);
	done();
}

/*
 * "all" (when @p all_ok) or a CID. Says what is wrong otherwise.
 * @return 0, or -1 after the message.
 */
static int parse_cid(const char *word, bool all_ok, uint64_t *cid)
{
	char err[APP_ERR_LEN];

	if (all_ok && strcmp(word, "all") == 0) {
		*cid = VSOCK_PMD_CID_ALL;
		return 0;
	}
	if (app_num_parse("CID", word, 0, UINT64_MAX, cid, err, sizeof(err)) == 0)
		return 0;
	printf("Bad argument '%s': expected %sa VM's CID (see show config): %s\n", word,
	       all_ok ? "all or " : "", err);
	return -1;
}

static void cmd_show_vm_stats(void *res, struct cmdline *cl __rte_unused,
			      void *data __rte_unused)
{
	uint64_t cid;

	if (parse_cid(((const struct words *)res)->w[3], true, &cid) == 0)
		display_vm_stats(cid);
	done();
}

static void cmd_show_lcore_stats(void *res __rte_unused, struct cmdline *cl __rte_unused,
				 void *data __rte_unused)
{
	display_lcore_stats();
	done();
}

static void cmd_show_conn(void *res, struct cmdline *cl __rte_unused, void *data __rte_unused)
{
	uint64_t cid;

	if (parse_cid(((const struct words *)res)->w[2], false, &cid) == 0)
		display_conns(cid, 0);
	done();
}

static void cmd_show_conn_from(void *res, struct cmdline *cl __rte_unused,
			       void *data __rte_unused)
{
	const char *word = ((const struct words *)res)->w[3];
	char err[APP_ERR_LEN];
	uint64_t start, cid;

	if (app_num_parse("first row", word, 0, UINT32_MAX, &start, err, sizeof(err)) < 0)
		printf("Bad argument '%s': expected the first row to show: %s\n", word, err);
	else if (parse_cid(((const struct words *)res)->w[2], false, &cid) == 0)
		display_conns(cid, (unsigned int)start);
	done();
}

static void cmd_show_config(void *res __rte_unused, struct cmdline *cl __rte_unused,
			    void *data __rte_unused)
{
	display_config();
	done();
}

static void cmd_clear_stats(void *res, struct cmdline *cl __rte_unused, void *data __rte_unused)
{
	uint64_t cid;
	int rc;

	if (parse_cid(((const struct words *)res)->w[2], true, &cid) < 0) {
		done();
		return;
	}
	rc = vsock_pmd_stats_clear(cid);
	if (rc == -ENOENT) {
		printf("No VM with CID %" PRIu64 ": see show config\n", cid);
	} else if (rc < 0) {
		printf("Cannot clear: %s\n", strerror(-rc));
	} else {
		display_forget(cid);
		if (cid == VSOCK_PMD_CID_ALL)
			printf("Statistics of every VM and lcore cleared\n");
		else
			printf("Statistics of VM cid %" PRIu64 " cleared\n", cid);
	}
	done();
}

static void cmd_set_burst(void *res, struct cmdline *cl __rte_unused, void *data __rte_unused)
{
	const char *word = ((const struct words *)res)->w[2];
	char err[APP_ERR_LEN];
	unsigned int n;
	int rc;

	if (app_burst_parse(word, &n, err, sizeof(err)) < 0) {
		printf("Bad %s\n", err);
		done();
		return;
	}
	rc = vsock_pmd_set_burst(n);
	if (rc < 0)
		printf("Cannot set the burst size: %s\n", strerror(-rc));
	else
		printf("Burst size set to %u packets\n", n);
	done();
}

static void cmd_set_record(void *res, struct cmdline *cl __rte_unused, void *data __rte_unused)
{
	const struct words *r = res;
	bool cycles = strcmp(r->w[1], "record-core-cycles") == 0, on;
	int rc;

	if (strcmp(r->w[2], "on") != 0 && strcmp(r->w[2], "off") != 0) {
		printf("Bad argument '%s': set %s on|off\n", r->w[2], r->w[1]);
		done();
		return;
	}
	on = strcmp(r->w[2], "on") == 0;
	rc = cycles ? vsock_pmd_set_record_core_cycles(on) : vsock_pmd_set_record_burst_stats(on);
	if (rc < 0)
		printf("Cannot change %s: %s\n", r->w[1], strerror(-rc));
	else
		printf("%s %s\n", r->w[1], on ? "on" : "off");
	done();
}

static void cmd_start(void *res __rte_unused, struct cmdline *cl __rte_unused,
		      void *data __rte_unused)
{
	struct vsock_pmd_config c;

	if (vsock_pmd_config_get(&c) == 0 && !c.paused)
		printf("Polling already started\n");
	else if (vsock_pmd_resume() == 0)
		printf("Polling started\n");
	done();
}

static void cmd_stop(void *res __rte_unused, struct cmdline *cl __rte_unused,
		     void *data __rte_unused)
{
	struct vsock_pmd_config c;

	if (vsock_pmd_config_get(&c) == 0 && c.paused) {
		printf("Polling already stopped\n");
	} else if (vsock_pmd_pause() == 0) {
		/* As testpmd's stop: the totals of the run that just ended. */
		printf("Polling stopped: no poll in progress, rings keep their descriptors\n");
		display_vm_stats(VSOCK_PMD_CID_ALL);
	}
	done();
}

static void cmd_quit(void *res __rte_unused, struct cmdline *cl, void *data __rte_unused)
{
	the_console->quit = true;
	cmdline_quit(cl);
}

#define INST(name, fn, help, ...) \
	static cmdline_parse_inst_t name = { \
		.f = fn, .data = NULL, .help_str = help, \
		.tokens = { __VA_ARGS__, NULL }, \
	}

INST(i_help, cmd_help, "help: list the commands", (void *)&t_help);
INST(i_show_vm, cmd_show_vm_stats, "show vm stats all|<cid>: counters of the VMs",
     (void *)&t_show, (void *)&t_vm, (void *)&t_stats2, (void *)&t_vm_sel);
INST(i_show_lcore, cmd_show_lcore_stats, "show lcore stats: counters of every lcore",
     (void *)&t_show, (void *)&t_lcore, (void *)&t_stats2);
INST(i_show_conn, cmd_show_conn, "show conn <cid>: connections of one VM",
     (void *)&t_show, (void *)&t_conn, (void *)&t_cid);
INST(i_show_conn_from, cmd_show_conn_from, "show conn <cid> <start>: from the start-th on",
     (void *)&t_show, (void *)&t_conn, (void *)&t_cid, (void *)&t_conn_start);
INST(i_show_config, cmd_show_config, "show config: lcores, VMs, settings",
     (void *)&t_show, (void *)&t_config);
INST(i_clear, cmd_clear_stats, "clear stats all|<cid>: restart counters from zero",
     (void *)&t_clear, (void *)&t_stats1, (void *)&t_clear_sel);
INST(i_set_burst, cmd_set_burst, "set burst <n>: packets per queue per poll",
     (void *)&t_set, (void *)&t_burst, (void *)&t_burst_n);
INST(i_set_record, cmd_set_record, "set record-burst-stats|record-core-cycles on|off",
     (void *)&t_set, (void *)&t_rec, (void *)&t_on_off);
INST(i_start, cmd_start, "start: resume polling", (void *)&t_start);
INST(i_stop, cmd_stop, "stop: pause polling", (void *)&t_stop);
INST(i_quit, cmd_quit, "quit: exit", (void *)&t_quit);

static cmdline_parse_ctx_t commands[] = {
	&i_help, &i_show_vm, &i_show_lcore, &i_show_conn, &i_show_conn_from, &i_show_config,
	&i_clear,
	&i_set_burst, &i_set_record, &i_start, &i_stop, &i_quit, NULL,
};

struct console *console_open(void)
{
	struct console *con = calloc(1, sizeof(*con));

	if (!con)
		return NULL;
	con->cl = cmdline_stdin_new(commands, PROMPT);
	if (!con->cl) {
		free(con);
		return NULL;
	}
	the_console = con;
	return con;
}

bool console_input(struct console *con)
{
	char buf[256];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	/* End of input is quit, as for testpmd: a script's last line need not say it. */
	if (n == 0 || cmdline_in(con->cl, buf, (int)n) < 0)
		con->quit = true;
	return !con->quit;
}

void console_redisplay(struct console *con)
{
	rdline_redisplay(cmdline_get_rdline(con->cl));
}

void console_close(struct console *con)
{
	if (!con)
		return;
	printf("\n");
	cmdline_stdin_exit(con->cl);
	the_console = NULL;
	free(con);
}
