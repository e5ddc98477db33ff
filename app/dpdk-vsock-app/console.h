/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef APP_CONSOLE_H
#define APP_CONSOLE_H

/**
 * The operator console (-i): testpmd-style commands read from stdin with librte_cmdline
 * (line editing, tab completion, history). The caller owns the event loop: it polls
 * stdin and hands the console whatever arrives, so that signals and the periodic
 * display keep working while an operator types.
 */

#include <stdbool.h>

struct console;

/** Take over stdin (raw mode on a terminal) and print the prompt. NULL on failure. */
struct console *console_open(void);

/** Read what stdin has and run the commands completed. False once the operator quit. */
bool console_input(struct console *con);

/** Print the prompt and the line being typed again, after other output. */
void console_redisplay(struct console *con);

/** Give stdin back as it was. NULL is allowed. */
void console_close(struct console *con);

#endif /* APP_CONSOLE_H */
