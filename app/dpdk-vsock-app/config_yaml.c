/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-device-vsock's YAML configuration, read with libyaml's event parser. Every entry of
 * its "vms:" list becomes the key=value description --vm takes, so one parser checks both
 * and they can never disagree; other top-level keys are our long options ("burst: 64").
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "args.h"

/* A VM of the "vms:" list, as --vm would describe it, and where its map starts. */
struct yaml_vm_spec {
	char spec[1200];
	yaml_mark_t mark;
};

struct yparse {
	yaml_parser_t parser;
	yaml_event_t ev;
	bool have_ev;
	/* Checked once the whole file parsed, so that a syntax error is reported first. */
	struct yaml_vm_spec vms[VSOCK_PMD_MAX_VMS];
	unsigned int nb_vms;
	const char *path;
	char *err;
	size_t err_len;
};

static int yfail(struct yparse *y, const yaml_mark_t *m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "FILE:LINE:COLUMN: message", counted from 1 as editors do. */
static int yfail(struct yparse *y, const yaml_mark_t *m, const char *fmt, ...)
{
	int n = snprintf(y->err, y->err_len, "%s:%zu:%zu: ", y->path, m->line + 1, m->column + 1);
	va_list ap;

	if (n < 0 || (size_t)n >= y->err_len)
		return -1;
	va_start(ap, fmt);
	vsnprintf(y->err + n, y->err_len - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *event_name(yaml_event_type_t t)
{
	switch (t) {
	case YAML_SCALAR_EVENT:
		return "a value";
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_MAPPING_START_EVENT:
		return "a map";
	case YAML_SEQUENCE_END_EVENT:
		return "the end of a list";
	case YAML_MAPPING_END_EVENT:
		return "the end of a map";
	case YAML_DOCUMENT_START_EVENT:
		return "another document";
	default:
		return "the end of the file";
	}
}

static int ynext(struct yparse *y)
{
	if (y->have_ev)
		yaml_event_delete(&y->ev);
	y->have_ev = false;
	if (!yaml_parser_parse(&y->parser, &y->ev)) {
		const yaml_parser_t *p = &y->parser;

		return yfail(y, &p->problem_mark, "%s%s%s", p->problem ? p->problem : "not YAML",
			     p->context ? " " : "", p->context ? p->context : "");
	}
	y->have_ev = true;
	if (y->ev.type == YAML_ALIAS_EVENT)
		return yfail(y, &y->ev.start_mark, "aliases (*%s) are not supported",
			     (const char *)y->ev.data.alias.anchor);
	return 0;
}

static int expect(struct yparse *y, yaml_event_type_t type, const char *what)
{
	if (ynext(y) < 0)
		return -1;
	if (y->ev.type != type)
		return yfail(y, &y->ev.start_mark, "expected %s, found %s", what,
			     event_name(y->ev.type));
	return 0;
}

static const char *scalar(const struct yparse *y)
{
	return (const char *)y->ev.data.scalar.value;
}

/* One map of the "vms:" list, the current event its start. */
static int yaml_vm(struct yparse *y, unsigned int idx)
{
	yaml_mark_t start = y->ev.start_mark;
	size_t used = 0;
	char *spec;

	if (idx == VSOCK_PMD_MAX_VMS)
		return yfail(y, &start, "at most %d VMs", VSOCK_PMD_MAX_VMS);
	spec = y->vms[idx].spec;
	y->vms[idx].mark = start;

	for (;;) {
		char key[64];
		int n;

		if (ynext(y) < 0)
			return -1;
		if (y->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (y->ev.type != YAML_SCALAR_EVENT || y->ev.data.scalar.length >= sizeof(key) ||
		    strpbrk(scalar(y), ",="))
			return yfail(y, &y->ev.start_mark, "expected a key of vms[%u] (guest_cid, "
				     "socket, uds_path, tx_buffer_size, queue_size, groups), "
				     "found %s", idx, y->ev.type == YAML_SCALAR_EVENT ?
				     "an invalid key" : event_name(y->ev.type));
		snprintf(key, sizeof(key), "%s", scalar(y));
		if (ynext(y) < 0)
			return -1;
		if (y->ev.type != YAML_SCALAR_EVENT)
			return yfail(y, &y->ev.start_mark, "expected a value for '%s', found %s",
				     key, event_name(y->ev.type));
		if (strchr(scalar(y), ','))
			return yfail(y, &y->ev.start_mark, "'%s': a value with ',' cannot be used",
				     key);
		n = snprintf(spec + used, sizeof(y->vms[idx].spec) - used, "%s=%s,", key, scalar(y));
		if (n < 0 || (size_t)n >= sizeof(y->vms[idx].spec) - used)
			return yfail(y, &y->ev.start_mark, "vms[%u] is described at too much length",
				     idx);
		used += (size_t)n;
	}
	if (used == 0)
		return yfail(y, &start, "vms[%u] is empty: expected guest_cid, socket and uds_path",
			     idx);
	spec[used - 1] = '\0';
	y->nb_vms = idx + 1;
	return 0;
}

static int yaml_vms(struct yparse *y)
{
	unsigned int n = y->nb_vms;
	yaml_mark_t start;

	if (expect(y, YAML_SEQUENCE_START_EVENT, "a list of VMs after 'vms:'") < 0)
		return -1;
	start = y->ev.start_mark;
	for (;;) {
		if (ynext(y) < 0)
			return -1;
		if (y->ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		if (y->ev.type != YAML_MAPPING_START_EVENT)
			return yfail(y, &y->ev.start_mark, "expected a map describing vms[%u], "
				     "found %s", n, event_name(y->ev.type));
		if (yaml_vm(y, y->nb_vms) < 0)
			return -1;
	}
	if (y->nb_vms == n)
		return yfail(y, &start, "expected at least one VM in 'vms:'");
	return 0;
}

/* The document: one map, "vms:" in it. */
static int yaml_document(struct yparse *y, struct app_opts *opts)
{
	bool have_vms = false;
	yaml_mark_t start;
	unsigned int i;

	if (expect(y, YAML_STREAM_START_EVENT, "a YAML stream") < 0 ||
	    expect(y, YAML_DOCUMENT_START_EVENT, "a map with a 'vms:' list") < 0 ||
	    expect(y, YAML_MAPPING_START_EVENT, "a map with a 'vms:' list") < 0)
		return -1;
	start = y->ev.start_mark;
	for (;;) {
		char key[64], msg[APP_ERR_LEN];
		yaml_mark_t key_mark;

		if (ynext(y) < 0)
			return -1;
		if (y->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (y->ev.type != YAML_SCALAR_EVENT || y->ev.data.scalar.length >= sizeof(key))
			return yfail(y, &y->ev.start_mark, "expected 'vms:' or an option name, "
				     "found %s", y->ev.type == YAML_SCALAR_EVENT ? "a long key" :
				     event_name(y->ev.type));
		snprintf(key, sizeof(key), "%s", scalar(y));
		key_mark = y->ev.start_mark;
		if (strcmp(key, "vms") == 0) {
			if (yaml_vms(y) < 0)
				return -1;
			have_vms = true;
			continue;
		}
		if (expect(y, YAML_SCALAR_EVENT, "the option's value") < 0)
			return -1;
		if (app_opt_set(key, scalar(y), opts, msg, sizeof(msg)) < 0)
			return yfail(y, &key_mark, "%s", msg);
	}
	if (!have_vms)
		return yfail(y, &start, "expected a 'vms:' list of VMs");
	if (expect(y, YAML_DOCUMENT_END_EVENT, "the end of the document") < 0 ||
	    expect(y, YAML_STREAM_END_EVENT, "the end of the file (one document only)") < 0)
		return -1;
	for (i = 0; i < y->nb_vms; i++) {
		char msg[APP_ERR_LEN];

		if (app_vm_add(y->vms[i].spec, opts, msg, sizeof(msg)) < 0)
			return yfail(y, &y->vms[i].mark, "vms[%u]: %s", i,
				     strncmp(msg, "--vm: ", 6) == 0 ? msg + 6 : msg);
	}
	return 0;
}

int app_config_yaml_load(const char *path, struct app_opts *opts, char *err, size_t err_len)
{
	struct yparse *y = calloc(1, sizeof(*y));
	FILE *f = fopen(path, "r");
	int rc = -1;

	if (!f || !y) {
		snprintf(err, err_len, "cannot read config file '%s': %m", path);
		goto out;
	}
	*y = (struct yparse){ .path = path, .err = err, .err_len = err_len };
	if (!yaml_parser_initialize(&y->parser)) {
		snprintf(err, err_len, "%s: cannot start the YAML parser", path);
		goto out;
	}
	yaml_parser_set_input_file(&y->parser, f);
	rc = yaml_document(y, opts);
	if (y->have_ev)
		yaml_event_delete(&y->ev);
	yaml_parser_delete(&y->parser);
out:
	if (f)
		fclose(f);
	free(y);
	return rc;
}
