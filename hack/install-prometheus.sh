#!/bin/sh
# Installs a Prometheus server binary for the tests (annotator/prometheus_test.go), from the
# Debian package, when none is installed. Idempotent and quiet: it prints one line when it
# installs, nothing when Prometheus is already there.
#
# The tests never use a system service: they run the binary themselves on a free loopback port
# with a temporary configuration and storage directory. So that the package's service neither
# starts nor lingers, a policy-rc.d that forbids service starts is in place during the install
# (the package's "Recommends", such as the node exporter, are not installed), and if an init
# system still started it, the service this install created is stopped and disabled.
#
# Usage: hack/install-prometheus.sh          (PROMETHEUS_BIN=/path/to/prometheus skips it all)
set -eu

if [ -n "${PROMETHEUS_BIN:-}" ] && [ -x "${PROMETHEUS_BIN}" ]; then
	exit 0
fi
if command -v prometheus >/dev/null 2>&1; then
	exit 0
fi

SUDO=
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "install-prometheus: Prometheus is missing and installing it needs root (or sudo)" >&2
		exit 1
	fi
fi

echo "install-prometheus: installing the Debian package prometheus (for the annotator's tests)"

# Forbid service starts for the length of the install; put back whatever policy was there.
policy=/usr/sbin/policy-rc.d
backup=
if [ -e "$policy" ]; then
	backup=$(mktemp)
	$SUDO cp -p "$policy" "$backup"
fi
restore() {
	if [ -n "$backup" ]; then
		$SUDO cp -p "$backup" "$policy"
		rm -f "$backup"
	else
		$SUDO rm -f "$policy"
	fi
}
trap restore EXIT
printf '#!/bin/sh\n# installed by hack/install-prometheus.sh for the length of an install\nexit 101\n' | $SUDO tee "$policy" >/dev/null
$SUDO chmod 755 "$policy"

# apt's chatter (debconf notes and the like) is shown only if the install fails.
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends prometheus; } >"$log" 2>&1; then
	cat "$log" >&2
	rm -f "$log"
	echo "install-prometheus: apt-get failed" >&2
	exit 1
fi
rm -f "$log"

# Belt and braces: if an init system started the service anyway, stop the one this install
# created and keep it from starting at boot. The tests do not use it.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	$SUDO systemctl disable --now prometheus.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/prometheus ]; then
	if $SUDO /etc/init.d/prometheus status >/dev/null 2>&1; then
		$SUDO /etc/init.d/prometheus stop >/dev/null 2>&1 || true
	fi
	if command -v update-rc.d >/dev/null 2>&1; then
		$SUDO update-rc.d prometheus disable >/dev/null 2>&1 || true
	fi
fi

if ! command -v prometheus >/dev/null 2>&1; then
	echo "install-prometheus: the package installed no prometheus binary on PATH" >&2
	exit 1
fi
