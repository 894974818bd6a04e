#!/usr/bin/env bash
# Installs what the production-shaped replica test bed (bench/chaos/) needs and `npm test` does not:
# Debian's haproxy (the load balancer in front of the replicas) and redis-sentinel (Redis Sentinel;
# redis-server itself comes with the Redis store tests' provisioning). Installs only what is
# missing, and only as root with apt-get; otherwise stops with the exact command to run. Starts
# nothing: the test bed starts and stops its own haproxy, redis-server and Sentinel processes on
# loopback (Debian's images keep package services from starting; so does policy-rc.d in containers).
set -euo pipefail

missing=()
command -v haproxy >/dev/null || missing+=(haproxy)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-sentinel >/dev/null || missing+=(redis-sentinel)
((${#missing[@]} == 0)) && exit 0

if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "provision-chaos: missing ${missing[*]}; install with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
echo "provision-chaos: installed ${missing[*]}"
