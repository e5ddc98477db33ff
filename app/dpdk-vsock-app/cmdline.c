/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The command line after "--": getopt over the long options of args.c, and --config read
 * by config.c in its place among them, so that what follows it overrides the file.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "args.h"

int app_args_parse(int argc, char **argv, struct app_opts *opts, char *err, size_t err_len)
{
	int opt;

	/* 0 makes glibc reinitialise getopt: the EAL or an earlier call used it. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:hi", app_long_opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			opts->interactive = true;
			break;
		case 'h':
			opts->help = true;
			break;
		case APP_OPT_VERSION:
			opts->version = true;
			break;
		case ':':
			snprintf(err, err_len, "option '%s' needs a value", argv[optind - 1]);
			return -1;
		case '?':
			snprintf(err, err_len, "unknown option '%s'", argv[optind - 1]);
			return -1;
		case APP_OPT_CONFIG:
			if (app_config_load(optarg, opts, err, err_len) < 0)
				return -1;
			break;
		default:
			if (app_opt_apply(opt, optarg, opts, err, err_len) < 0)
				return -1;
			break;
		}
	}
	if (optind < argc) {
		snprintf(err, err_len, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (opts->single_vm[0] != '\0') {
		opts->single_vm[strlen(opts->single_vm) - 1] = '\0';
		if (app_vm_add(opts->single_vm, opts, err, err_len) < 0)
			return -1;
		opts->peer_keys = true;
	}
	return 0;
}
