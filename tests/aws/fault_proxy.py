#!/usr/bin/env python3
"""A fault-injecting HTTP proxy in front of moto_server, for the AWS adapter tests.

moto's CreateFleet always takes the first override and never returns an errorSet, and it does
not paginate DescribeInstanceTypeOfferings. This proxy forwards every request to moto and, when
told to through POST /__fault, answers in the real EC2 formats instead:
  throttle  503 with RequestLimitExceeded (EC2 XML error body)
  html500   500 with an HTML body, as a load balancer would send
  ice       CreateFleet: the named instance types fail with InsufficientInstanceCapacity in the
            errorSet; the remaining overrides go to moto
  paginate  DescribeInstanceTypeOfferings split into pages of `page_size` with nextToken
  stall     no answer for `seconds` from when the fault is set: every request that arrives
            meanwhile waits until then and is forwarded after (an endpoint that hangs); action
            "*" stalls every action. A client that gives up early sees a timeout
CreateFleet is idempotent by ClientToken, as EC2 is (moto is not): a request repeating a token
that already launched gets the first answer again, so a controller re-driving a launch after a
crash never gets a second instance.
It also serves fake credential endpoints (EKS Pod Identity and IMDSv2) and remembers the last
form body per Action (GET /__last?action=X). Only the standard library; loopback only.

Usage: fault_proxy.py UPSTREAM_PORT  (prints the port it listens on, then serves)
"""
import json
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM = "http://127.0.0.1:%d" % int(sys.argv[1])
LOCK = threading.Lock()
FLEET_LOCK = threading.Lock()
FAULTS = {}  # action -> {"kind":..., "count": n (-1 forever), ...}
LAST = {}  # action -> raw form body
CACHE = {}  # "paginate" -> the upstream answer being paged through
FLEETS = {}  # CreateFleet ClientToken -> (status, body, content type) of its first success
CREDS = {
    "AccessKeyId": "ASIAPODIDENTITY00001",
    "SecretAccessKey": "pod-identity-secret-do-not-log",
    "Token": "pod-identity-session-token-do-not-log",
    "Expiration": "2099-01-01T00:00:00Z",
}
POD_TOKEN = "pod-identity-authorization-token"
IMDS_TOKEN = "imds-session-token-abc"
NS = "http://ec2.amazonaws.com/doc/2016-11-15"


def ec2_error(code, message):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
            "<Message>%s</Message></Error></Errors><RequestID>proxy</RequestID></Response>"
            % (code, message)).encode()


def take_fault(action):
    with LOCK:
        fault = FAULTS.get(action) or FAULTS.get("*")
        if not fault:
            return None
        if fault["kind"] == "stall":
            if time.monotonic() >= fault["until"]:
                del FAULTS[fault["action"]]
                return None
            return dict(fault)
        if fault["count"] > 0:
            fault["count"] -= 1
            if fault["count"] == 0:
                del FAULTS[action]
        return dict(fault)


def overrides_of(form):
    found = {}
    for key, values in form.items():
        m = re.match(r"LaunchTemplateConfigs\.1\.Overrides\.(\d+)\.(\w+)$", key)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = values[0]
    return [found[i] for i in sorted(found)]


def override_xml(o):
    parts = "".join("<%s>%s</%s>" % (k[0].lower() + k[1:], v, k[0].lower() + k[1:])
                    for k, v in sorted(o.items()) if k in ("InstanceType", "SubnetId", "AvailabilityZone"))
    return ("<launchTemplateAndOverrides><launchTemplateSpecification><launchTemplateName>lt"
            "</launchTemplateName><version>$Latest</version></launchTemplateSpecification>"
            "<overrides>%s</overrides></launchTemplateAndOverrides>" % parts)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="text/xml"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def forward(self, body):
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("content-length", "expect")}
        req = urllib.request.Request(UPSTREAM + self.path, data=body if self.command != "GET" else None,
                                     headers=headers, method=self.command)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.read(), resp.headers.get("Content-Type", "text/xml")
        except urllib.error.HTTPError as e:
            return e.code, e.read(), e.headers.get("Content-Type", "text/xml")

    def do_GET(self):
        self.handle_any(b"")

    def do_PUT(self):
        self.handle_any(self.read_body())

    def do_POST(self):
        self.handle_any(self.read_body())

    def read_body(self):
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def handle_local(self, body):
        path = urllib.parse.urlparse(self.path)
        if path.path == "/__fault":
            spec = json.loads(body)
            if spec["kind"] == "stall":
                spec["until"] = time.monotonic() + float(spec["seconds"])
            with LOCK:
                FAULTS[spec["action"]] = spec
            return self.reply(200, b"{}", "application/json")
        if path.path == "/__ping":
            return self.reply(200, b"{}", "application/json")
        if path.path == "/__reset":
            with LOCK:
                FAULTS.clear()
                LAST.clear()
            return self.reply(200, b"{}", "application/json")
        if path.path == "/__last":
            action = urllib.parse.parse_qs(path.query)["action"][0]
            return self.reply(200, LAST.get(action, b""), "text/plain")
        if path.path == "/pod-identity":
            if self.headers.get("Authorization") != POD_TOKEN:
                return self.reply(401, b'{"message":"bad token"}', "application/json")
            return self.reply(200, json.dumps(CREDS).encode(), "application/json")
        if path.path == "/latest/api/token" and self.command == "PUT":
            return self.reply(200, IMDS_TOKEN.encode(), "text/plain")
        if path.path.startswith("/latest/meta-data/iam/security-credentials/"):
            if self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
                return self.reply(401, b"", "text/plain")
            if path.path.endswith("/"):
                return self.reply(200, b"node-role", "text/plain")
            return self.reply(200, json.dumps(dict(CREDS, Code="Success")).encode(), "application/json")
        return None

    def handle_any(self, body):
        if self.handle_local(body) is not None:
            return
        if self.path.startswith(("/__", "/pod-identity", "/latest/")):
            return self.reply(404, b"unknown local path", "text/plain")
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace")) if body else {}
        action = form.get("Action", [self.headers.get("X-Amz-Target", "")])[0]
        with LOCK:
            LAST[action] = body
        fault = take_fault(action)
        kind = fault["kind"] if fault else None
        if kind == "stall":
            time.sleep(max(0.0, fault["until"] - time.monotonic()))
        if kind == "throttle":
            return self.reply(503, ec2_error("RequestLimitExceeded", "Request limit exceeded."))
        if kind == "html500":
            return self.reply(500, b"<html><head><title>500 Internal Server Error</title></head>"
                                   b"<body><h1>Internal Server Error</h1></body></html>", "text/html")
        if kind == "ice":
            return self.create_fleet_ice(form, fault)
        if kind == "paginate":
            return self.paginate(form, body, fault)
        if action == "AWSPriceListService.GetProducts":
            return self.get_products(json.loads(body or b"{}"))
        token = form.get("ClientToken", [""])[0] if action == "CreateFleet" else ""
        if not token:
            return self.reply(*self.forward(body))
        # One CreateFleet at a time: a retry that arrives while the first try is still held (a
        # stall) must find the first answer, not launch again.
        with FLEET_LOCK:
            with LOCK:
                if token in FLEETS:
                    return self.reply(*FLEETS[token])
            status, data, content_type = self.forward(body)
            if status == 200 and b"<instanceIds>" in data:
                with LOCK:
                    FLEETS.setdefault(token, (status, data, content_type))
        self.reply(status, data, content_type)

    def get_products(self, request):
        # moto has no Price List API: two pages in the real shape (entries are JSON strings).
        def entry(instance_type, usd):
            return json.dumps({"product": {"attributes": {"instanceType": instance_type, "location": "US East (N. Virginia)"}},
                               "terms": {"OnDemand": {"T1": {"priceDimensions": {"D1": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}}})
        if request.get("NextToken") == "page-2":
            answer = {"PriceList": [entry("c5.large", "0.0850000000"), "{not json"], "FormatVersion": "aws_v1"}
        else:
            answer = {"PriceList": [entry("m5.large", "0.0960000000")], "NextToken": "page-2", "FormatVersion": "aws_v1"}
        return self.reply(200, json.dumps(answer).encode(), "application/x-amz-json-1.1")

    def create_fleet_ice(self, form, fault):
        overrides = overrides_of(form)
        failing = [o for o in overrides if o.get("InstanceType") in fault["types"]]
        passing = [o for o in overrides if o.get("InstanceType") not in fault["types"]]
        errors = "".join(
            "<item>%s<lifecycle>%s</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode>"
            "<errorMessage>We currently do not have sufficient %s capacity in the Availability Zone "
            "you requested.</errorMessage></item>"
            % (override_xml(o), form.get("TargetCapacitySpecification.DefaultTargetCapacityType", ["on-demand"])[0],
               o.get("InstanceType")) for o in failing)
        if not passing:
            xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<CreateFleetResponse xmlns="%s"><requestId>proxy'
                   "</requestId><fleetId>fleet-proxy</fleetId><errorSet>%s</errorSet><fleetInstanceSet/>"
                   "</CreateFleetResponse>" % (NS, errors))
            return self.reply(200, xml.encode())
        rest = {k: v for k, v in form.items() if not k.startswith("LaunchTemplateConfigs.1.Overrides.")}
        for i, o in enumerate(passing, 1):
            for k, v in o.items():
                rest["LaunchTemplateConfigs.1.Overrides.%d.%s" % (i, k)] = [v]
        status, data, content_type = self.forward(urllib.parse.urlencode(rest, doseq=True).encode())
        if status == 200:
            data = data.replace(b"</fleetId>", b"</fleetId><errorSet>" + errors.encode() + b"</errorSet>", 1)
        self.reply(status, data, content_type)

    def paginate(self, form, body, fault):
        # The first page asks moto; later pages reuse that answer, as a real paginated call
        # walks one consistent listing.
        if "NextToken" not in form or "paginate" not in CACHE:
            status, data, content_type = self.forward(body)
            if status != 200:
                return self.reply(status, data, content_type)
            CACHE["paginate"] = (data, content_type)
        data, content_type = CACHE["paginate"]
        text = data.decode()
        items = re.findall(r"<item>.*?</item>", text, re.S)
        start = int(form.get("NextToken", ["0"])[0])
        size = int(fault["page_size"])
        page = items[start:start + size]
        token = "<nextToken>%d</nextToken>" % (start + size) if start + size < len(items) else ""
        head = text[: text.index("<item>")] if items else text
        tail = text[text.rindex("</item>") + len("</item>"):] if items else ""
        closing = "</DescribeInstanceTypeOfferingsResponse>"
        out = head + "".join(page) + tail.replace(closing, token + closing)
        self.reply(200, out.encode(), content_type)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
