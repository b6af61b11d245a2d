"""A stand-in for a mesh's injector, for `make e2e-apiserver`: a mutating
webhook on loopback that appends one sidecar container to every Pod that has
none of that name. Registered after tandem's (by name), it makes the API
server invoke tandem's webhook or policy again (`reinvocationPolicy:
IfNeeded`), as Istio's injector does in a real cluster.
"""

import base64
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# After "tandem-injector": webhooks are called in the order of their
# configurations' names.
NAME = "zz-tandem-e2e-mesh"


class MeshWebhook:
    def __init__(self, api, sidecar):
        self.api = api
        sidecar_json = sidecar

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                pod = request["object"]
                names = [c["name"] for c in pod["spec"]["containers"]]
                response = {"uid": request["uid"], "allowed": True}
                if sidecar_json["name"] not in names:
                    patch = [{"op": "add", "path": "/spec/containers/-", "value": sidecar_json}]
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
                body = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                   "kind": "AdmissionReview", "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(api.dir / "tls.crt"), str(api.dir / "tls.key"))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        port = self.server.server_address[1]
        ca = base64.b64encode((api.dir / "ca.crt").read_bytes()).decode()
        self.config = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": NAME},
            "webhooks": [{
                "name": "mesh.e2e.tandem.dev",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": f"https://127.0.0.1:{port}/inject", "caBundle": ca},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["pods"]}],
                "objectSelector": {"matchLabels": {"tandem.dev/inject": "enabled"}},
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "timeoutSeconds": 5,
            }],
        }
        api.must("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
                 self.config)

    def stop(self):
        self.api.must("DELETE",
                      f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{NAME}",
                      ok=(200, 202, 404))
        self.server.shutdown()
        self.server.server_close()
