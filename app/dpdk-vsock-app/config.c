/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration files say what the command line says, one long option per
 * line, so both go through the same parsers and can never disagree.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "args.h"

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int config_line(char *line, struct app_opts *opts, char *err, size_t err_len)
{
	char *key = line, *val = line;

	while (*val && !isspace((unsigned char)*val))
		val++;
	if (*val)
		*val++ = '\0';
	val = trim(val);

	if (*val == '\0') {
		snprintf(err, err_len, "'%s' needs a value", key);
		return -1;
	}
	return app_opt_set(key, val, opts, err, err_len);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

/*
 * vhost-device-vsock's YAML, by name (*.yaml, *.yml) or by content: its first line that
 * is neither blank nor a comment opens a document ("---") or the "vms:" map. Neither can
 * start a line of ours, whose keys are option names followed by a space.
 */
static bool is_yaml(const char *path, FILE *f)
{
	char line[1200];

	if (ends_with(path, ".yaml") || ends_with(path, ".yml"))
		return true;
	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line);

		if (*s == '\0' || *s == '#')
			continue;
		rewind(f);
		return strncmp(s, "---", 3) == 0 || strncmp(s, "vms:", 4) == 0;
	}
	rewind(f);
	return false;
}

int app_config_load(const char *path, struct app_opts *opts, char *err, size_t err_len)
{
	char line[1200], msg[APP_ERR_LEN];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "r");
	int rc = 0;

	if (!f) {
		snprintf(err, err_len, "cannot read config file '%s': %s", path, strerror(errno));
		return -1;
	}
	if (is_yaml(path, f)) {
		fclose(f);
		return app_config_yaml_load(path, opts, err, err_len);
	}
	while (fgets(line, sizeof(line), f)) {
		char *hash, *s;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, err_len, "%s:%u: line too long", path, lineno);
			rc = -1;
			break;
		}
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		s = trim(line);
		if (*s == '\0')
			continue;
		if (config_line(s, opts, msg, sizeof(msg)) < 0) {
			snprintf(err, err_len, "%s:%u: %s", path, lineno, msg);
			rc = -1;
			break;
		}
	}
	fclose(f);
	return rc;
}
