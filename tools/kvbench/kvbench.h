/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbench subcommands.  Each takes the arguments after its name (argv[0]
 * is the subcommand) and returns the exit status: 0, 1 when the run
 * failed, 2 for a usage error.
 */
#ifndef KVBENCH_H
#define KVBENCH_H

int kvbench_map_main(int argc, char **argv);
int kvbench_frames_main(int argc, char **argv);
int kvbench_attn_main(int argc, char **argv);
int kvbench_prefix_main(int argc, char **argv);
int kvbench_resize_main(int argc, char **argv);
int kvbench_swap_main(int argc, char **argv);

#endif
