#!/bin/bash
# The system tools the test suite needs, for `make test` and `.ci/run` alike: each missing one
# is installed with apt-get, as root or through `sudo -n`; when neither can, the script stops
# with one line naming the missing packages and the command that installs them, before any
# test runs. A prepared machine skips apt entirely. Then axe-core (tests/console/package.json)
# is installed with npm when it is missing.
#
# Uses bash builtins and absolute paths only, so it also answers on a machine (or in a test)
# whose PATH holds none of the tools.
set -euo pipefail
here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
cd "$here/.."

# tool check -> Debian package. git: the store's own tool (push tests); make and python3-venv:
# the test command itself; openssl: the TLS tests' certificates; puppet and hiera-eyaml: the
# Hiera tests; chromium: the console's browser test (tests/console/test_browser.py); graphviz:
# the console's graph page (`dot`); nodejs and npm: axe-core for the browser test's
# accessibility check; etcd-server and haproxy: the cluster tests (tests/cluster/); wrk: the
# benches' load generator, so their smoke runs (tests/bench/) take the measured runs' path;
# iptables and iproute2: tests that build their own hosts in network namespaces.
missing=()
has() { command -v "$1" >/dev/null; }
sbin() { has "$1" || [[ -x /usr/sbin/$1 || -x /sbin/$1 ]]; }
has git || missing+=(git)
has make || missing+=(make)
has openssl || missing+=(openssl)
has puppet || missing+=(puppet)
has eyaml || missing+=(hiera-eyaml)
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
has dot || missing+=(graphviz)
# Only when absent: a nodejs from outside Debian (NodeSource) conflicts with Debian's npm.
has node || missing+=(nodejs)
has npm || missing+=(npm)
[[ -x /usr/bin/etcd ]] || missing+=(etcd-server)
[[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
has wrk || missing+=(wrk)
sbin iptables || missing+=(iptables)
sbin ip || missing+=(iproute2)
# make builds the virtualenv from /usr/bin/python3 when that can make one (Makefile).
python=/usr/bin/python3
[[ -x $python ]] || python=python3
"$python" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)

# GITSTORE_DEPS_NO_INSTALL=1: report what is missing, install nothing.
if ((${#missing[@]})); then
    sudo=(none)
    if [[ ${GITSTORE_DEPS_NO_INSTALL:-} != 1 ]] && has apt-get; then
        if ((EUID == 0)); then
            sudo=()
        elif has sudo && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        fi
    fi
    if [[ ${sudo[*]} == none ]]; then
        command="apt-get install -y ${missing[*]}"
        ((EUID == 0)) || command="sudo $command"
        need="the tests need packages that are not installed: ${missing[*]}"
        echo "$need; install them with: $command" >&2
        exit 1
    fi
    echo "installing ${missing[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# axe-core, pinned in tests/console/package.json (the browser test would install it too).
if [[ ${GITSTORE_DEPS_NO_INSTALL:-} != 1 && ! -d tests/console/node_modules/axe-core ]]; then
    (cd tests/console && npm install --no-audit --no-fund --no-package-lock)
fi
