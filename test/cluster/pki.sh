#!/usr/bin/env bash
# Certificates and keys of the test cluster (once per state dir): a CA, the
# API server's serving certificate (loopback and the kubernetes Service
# addresses), the service-account key pair, and the admin token.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
P="$D/pki"
[ -f "$P/.done" ] && exit 0
command -v openssl >/dev/null || die "openssl is needed (apt-get install openssl)"
mkdir -p "$P"; chmod 700 "$P"
cd "$P"
openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=fnhost-test-ca" \
  -keyout ca.key -out ca.crt 2>/dev/null
cat > apiserver.ext <<EXT
basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1,IP:$BRIDGE_IP
EXT
openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
  -extfile apiserver.ext -out apiserver.crt 2>/dev/null
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
# One static admin token (system:masters): the whole cluster is a throwaway
# on loopback, and every component and test uses this identity.
token="$(openssl rand -hex 24)"
echo "$token,admin,admin,system:masters" > tokens.csv
echo "$token" > admin.token
chmod 600 ./*.key tokens.csv admin.token
touch .done
