"""An OTLP/HTTP trace receiver for tests/it/traces.rs, built on the OpenTelemetry project's own
protobuf types (opentelemetry-proto): every span of every ExportTraceServiceRequest posted to
/v1/traces is written to OUT as one JSON line. It also serves an empty JWKS at /jwks and notes
the `traceparent` each fetch carried, so the test sees a node's outbound call join the trace.

    receiver.py OUT      (prints "listening PORT" once ready; stops when stdin closes)
"""

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]
LOCK = threading.Lock()


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def write(record):
    with LOCK, open(OUT, "a") as f:
        f.write(json.dumps(record) + "\n")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/metrics":
            # The node pushes its metrics to the same endpoint (OTLP/JSON); not judged here.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            return
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        if self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_error(415)
            return
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        for rs in req.resource_spans:
            resource = {a.key: value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    write({
                        "service": resource.get("service.name"),
                        "instance": resource.get("service.instance.id"),
                        "name": s.name,
                        "kind": s.kind,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "attributes": {a.key: value(a.value) for a in s.attributes},
                        "links": [l.span_id.hex() for l in s.links],
                        "status": s.status.code,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                    })
        out = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_GET(self):
        if self.path != "/jwks":
            self.send_error(404)
            return
        write({"jwks_fetch": self.headers.get("traceparent")})
        out = b'{"keys": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(f"listening {server.server_address[1]}", flush=True)
sys.stdin.read()
server.shutdown()
