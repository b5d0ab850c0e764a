# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the scripts that make Debian roots (kernels.sh, deb_root.sh):
# the archive this machine's apt uses, and its proxy if it has one.
#
#   MIRROR     Debian's archive ($KVA_DEBIAN_MIRROR, else apt's, else
#              deb.debian.org)
#   SECURITY   its security archive ($KVA_DEBIAN_SECURITY, ...)
#   http_proxy apt's Acquire::http::Proxy, exported where set

apt_uri() {
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	    /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -o "https\?://[^ ]*/$1/\?\( \|\$\)" | head -n 1 |
		sed 's| *$||; s|/$||'
}
MIRROR=${KVA_DEBIAN_MIRROR:-$(apt_uri debian)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY=${KVA_DEBIAN_SECURITY:-$(apt_uri debian-security)}
SECURITY=${SECURITY:-http://deb.debian.org/debian-security}
http_proxy=
eval "$(apt-config shell http_proxy Acquire::http::Proxy 2>/dev/null)" || true
[ -z "$http_proxy" ] || export http_proxy
