#!/bin/sh
# The injector without cert-manager: makes a CA and a serving certificate with
# openssl, stores them as the Secret tandem-injector-tls and puts the CA in the
# webhooks' caBundle. Run it after `kubectl apply -f tandem-injector.yaml`
# (without cert-manager.yaml), and again before the certificate expires
# (DAYS, 825 by default): the injector serves the renewed Secret without a
# restart, and the CA stays the same for 10 years.
#
#   NAMESPACE=tandem-system DAYS=825 ./self-signed.sh
#   ./self-signed.sh --out DIR    # only write ca.crt, tls.crt, tls.key to DIR
#
# Needs openssl (1.1.1 or 3.x); kubectl unless --out. An existing ca.crt/ca.key
# in the working directory (or DIR) is reused, so renewing keeps the caBundle.
set -eu

namespace=${NAMESPACE:-tandem-system}
days=${DAYS:-825}
service=tandem-injector.$namespace.svc
out=
if [ "${1:-}" = --out ]; then
  out=${2:?usage: self-signed.sh [--out DIR]}
  mkdir -p "$out"
  cd "$out"
fi

if [ ! -s ca.crt ] || [ ! -s ca.key ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj /CN=tandem-injector-ca -keyout ca.key -out ca.crt \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    2>/dev/null
fi
cat >tls.ext <<EXT
subjectAltName = DNS:$service, DNS:$service.cluster.local
extendedKeyUsage = serverAuth
keyUsage = critical, digitalSignature
basicConstraints = critical, CA:FALSE
EXT
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$service" \
  -keyout tls.key -out tls.csr 2>/dev/null
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
  -extfile tls.ext -out tls.crt 2>/dev/null
rm -f tls.csr tls.ext ca.srl
echo "self-signed.sh: $service: tls.crt (valid $days days) signed by ca.crt" >&2
[ -z "$out" ] || exit 0

kubectl -n "$namespace" create secret tls tandem-injector-tls --cert tls.crt --key tls.key \
  --dry-run=client -o yaml | kubectl apply -f -
bundle=$(base64 <ca.crt | tr -d '\n')
kubectl patch mutatingwebhookconfiguration tandem-injector --type json -p "[
  {\"op\": \"add\", \"path\": \"/webhooks/0/clientConfig/caBundle\", \"value\": \"$bundle\"},
  {\"op\": \"add\", \"path\": \"/webhooks/1/clientConfig/caBundle\", \"value\": \"$bundle\"}]"
