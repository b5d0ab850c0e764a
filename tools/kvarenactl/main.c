// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - show and manage kvarena arenas.
 *
 *   kvarenactl [options] stat|clients|top|metrics [NAME]
 *   kvarenactl create NAME --frames N [--frame-size S] [--backend B | --file F] ...
 *   kvarenactl create NAME --gang M0,M1,... [--owner U] [--mode M] ...
 *   kvarenactl destroy NAME [--wait SECONDS]
 *   kvarenactl limit NAME CLIENT [--min N] [--max N]
 *   kvarenactl kill NAME CLIENT [-s SIGNAL]
 *   kvarenactl events NAME [--zmq ENDPOINT [--replay ENDPOINT] ...]
 *   kvarenactl tier NAME --lower LOWER [--free-target N] | NAME --none
 *   kvarenactl agent NAME [-n COUNT] [--wait SECONDS]
 *   kvarenactl apply [FILE] [--check]
 *   kvarenactl help [COMMAND]
 *
 * Options may come before or after the command; cmdline.c has them all.
 * See Documentation/operators.rst.
 */
#include <errno.h>
#include <string.h>


#include "kvarenactl.h"

int main(int argc, char **argv)
{
	struct kvactl_opts o;
	int ret;

	kvactl_opts_defaults(&o);
	ret = kvactl_cmdline(argc, argv, &o);
	if (ret < 0)
		ret = o.run(&o);
	if (fflush(stdout) || ferror(stdout)) {
		kvactl_err("writing the output: %s", strerror(errno));
		return KVACTL_FAIL;
	}
	return ret;
}
