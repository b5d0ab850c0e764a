# SPDX-License-Identifier: GPL-2.0
#
# extract.awk - the command lines of Documentation/operators.rst and the
# README, as a list of records for doc_test (selftests/docs/doc_test.c):
#
#   awk -f extract.awk Documentation/operators.rst README > spec
#
# Each record is "@@KIND FILE:LINE", the command (one line; a documented
# command continued with '\' is joined), for a session "@@out" and the
# documented output, and "@@end".  The kinds:
#
#   session  "$ COMMAND" in a literal block, and the lines after it up to
#            the next "$ " or the block's end: run, and its output (stdout
#            and stderr) must be the documented one
#   setup    ".. doctest: COMMAND", an rst comment: the state an example
#            shows (arenas, clients), made where the reader does not see
#            it; must exit 0
#   run      an inline ``kvarenactl ...`` of the prose with no placeholder
#            (no capital word, no [...]): must exit 0
#   parse    a kvarenactl command in a literal block with no "$ " (one that
#            cannot run here, as a CUDA one in a VM without a GPU): must not
#            be a usage error (exit status 2)
#   needs    ".. doctest-needs: WHAT", an rst comment: the records after it
#            (to the next one; "none" ends it) need WHAT of the kernel -
#            "dmem", the dmem cgroup controller - and SKIP, saying so,
#            where it has not got it
#
# The synopsis (the literal block after the "Synopsis" heading) is a
# grammar, not commands, and is left out.  In the README (plain text) a
# session is "    $ COMMAND" and the 4-space lines after it; the README's
# records start with a setup that unloads the module, so that its
# instructions load it as written, puts what they name
# (build/kmod/$(uname -r)/kvarena.ko, build/tools/kvarenactl) where they
# name it, and gives the VM's initramfs the /etc/passwd and /etc/group a
# machine has, for the names of users.

function emit_start(kind, line, cmd) {
	printf "@@%s %s:%d\n%s\n", kind, fname, line, cmd
}

function emit_end() {
	print "@@end"
}

# Close the session being read, with its output less trailing blank lines.
function close_session(   i, last) {
	if (!in_session)
		return
	last = nout
	while (last > 0 && out[last] == "")
		last--
	print "@@out"
	for (i = 1; i <= last; i++)
		print out[i]
	emit_end()
	in_session = 0
	nout = 0
}

function indent_of(s) {
	match(s, /^ */)
	return RLENGTH
}

# Inline ``kvarenactl ...`` literals of a prose line that name no placeholder.
function inline_commands(s, line,   rest, start, cmd) {
	rest = s
	while ((start = index(rest, "``kvarenactl ")) > 0) {
		rest = substr(rest, start + 2)
		cmd = substr(rest, 1, index(rest, "``") - 1)
		rest = substr(rest, index(rest, "``") + 2)
		if (cmd == "" || cmd ~ /[A-Z][A-Z]/ || cmd ~ /[][|]/)
			continue
		emit_start("run", line, cmd)
		emit_end()
	}
}

FNR == 1 {
	close_session()
	fname = FILENAME
	sub(/.*\//, "", fname)
	readme = fname !~ /\.rst$/
	in_block = 0
	want_block = 0
	in_session = 0
	pending = ""
	section = ""
	prev = ""
	if (readme) {
		emit_start("setup", 0, "for a in $(ls /sys/class/misc/kvarena/arenas); do kvarenactl destroy \"$a\" || exit 1; done; rmmod kvarena && mkdir -p build/kmod/$(uname -r) build/tools /etc && cp /kvarena.ko build/kmod/$(uname -r)/ && cp \"$(command -v kvarenactl)\" build/tools/ && { [ -e /etc/passwd ] || echo root:x:0:0:root:/root:/bin/sh > /etc/passwd; } && { [ -e /etc/group ] || echo root:x:0: > /etc/group; }")
		emit_end()
	}
}

# ---- the README: plain text, 4-space blocks ----

readme {
	if (pending != "") {
		# A command continued with '\'.
		line_text = $0
		sub(/^ +/, "", line_text)
		pending = pending " " line_text
		if (pending ~ /\\$/) {
			sub(/ *\\$/, "", pending)
			next
		}
		emit_start("session", pending_line, pending)
		pending = ""
		in_session = 1
		next
	}
	if ($0 ~ /^    \$ /) {
		close_session()
		pending = substr($0, 7)
		pending_line = FNR
		if (pending ~ /\\$/) {
			sub(/ *\\$/, "", pending)
			next
		}
		emit_start("session", FNR, pending)
		pending = ""
		in_session = 1
		next
	}
	if (in_session && $0 ~ /^    /) {
		out[++nout] = substr($0, 5)
		next
	}
	close_session()
	next
}

# ---- reStructuredText ----

# A section heading: the title is the line above its underline.
/^(=+|-+)$/ && length($0) >= 3 && prev != "" {
	section = prev
}

{
	prev = $0
}

# Inside a literal block: until a non-blank line at or left of the
# paragraph that opened it.
in_block {
	if ($0 != "" && indent_of($0) <= para_indent) {
		close_session()
		in_block = 0
	} else {
		text = $0 == "" ? "" : substr($0, block_indent + 1)
		if (pending != "") {
			line_text = text
			sub(/^ +/, "", line_text)
			pending = pending " " line_text
			if (pending ~ /\\$/) {
				sub(/ *\\$/, "", pending)
				next
			}
			emit_start(pending_kind, pending_line, pending)
			if (pending_kind == "session")
				in_session = 1
			else
				emit_end()
			pending = ""
			next
		}
		if (text ~ /^\$ /) {
			close_session()
			pending = substr(text, 3)
			pending_kind = "session"
			pending_line = FNR
		} else if (!in_session && text ~ /^kvarenactl / &&
			   section != "Synopsis") {
			pending = text
			pending_kind = "parse"
			pending_line = FNR
		} else {
			if (in_session)
				out[++nout] = text
			next
		}
		if (pending ~ /\\$/) {
			sub(/ *\\$/, "", pending)
			next
		}
		emit_start(pending_kind, pending_line, pending)
		if (pending_kind == "session")
			in_session = 1
		else
			emit_end()
		pending = ""
		next
	}
}

# The first indented line after "::" opens the block.
want_block && $0 != "" {
	want_block = 0
	if (indent_of($0) > para_indent) {
		in_block = 1
		block_indent = indent_of($0)
		# Read this line as the block's first.
		text = substr($0, block_indent + 1)
		if (text ~ /^\$ /) {
			pending = substr(text, 3)
			pending_kind = "session"
		} else if (text ~ /^kvarenactl / && section != "Synopsis") {
			pending = text
			pending_kind = "parse"
		} else {
			next
		}
		pending_line = FNR
		if (pending ~ /\\$/) {
			sub(/ *\\$/, "", pending)
			next
		}
		emit_start(pending_kind, pending_line, pending)
		if (pending_kind == "session")
			in_session = 1
		else
			emit_end()
		pending = ""
		next
	}
}

/^\.\. doctest-needs: / {
	emit_start("needs", FNR, substr($0, 19))
	emit_end()
	next
}

/^\.\. doctest: / {
	emit_start("setup", FNR, substr($0, 13))
	emit_end()
	next
}

# A paragraph ending in "::" is followed by a literal block.
/::$/ && $0 !~ /^\.\. / {
	want_block = 1
	para_indent = indent_of($0)
}
# The expanded form "text::" at the end of a paragraph's last line; a
# paragraph's indent is that of its first line, which for list items is
# close enough: their blocks are indented further than their text.

!in_block {
	inline_commands($0, FNR)
}

END {
	close_session()
}
