#!/bin/sh
# Stand-in for the Vault Agent sidecar the injector adds: 1s after it starts it
# renders each secret named on its command line into /vault/secrets (the shared
# emptyDir the injector mounts into every container), written whole and then
# renamed into place as the agent does, while its API listens on :8200 (ready
# after 1s; POST quits it when QUIT_ENABLED=true, the agent-enable-quit
# annotation). Usage: vault-agent.sh SECRET...
(
  sleep 1
  for name in "$@"; do
    printf 'username=v-job-%s\npassword=rendered\n' "$name" > "/vault/secrets/.$name.tmp"
    mv "/vault/secrets/.$name.tmp" "/vault/secrets/$name"
    echo "vault-agent stand-in: rendered /vault/secrets/$name"
  done
) &
exec /generic-sidecar 8200
