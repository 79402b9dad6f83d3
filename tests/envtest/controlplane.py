"""A real Kubernetes control plane for tests, started the way controller-runtime's envtest starts
one: etcd and kube-apiserver (optionally kube-scheduler and kube-controller-manager) as local
processes on loopback ports, with throwaway certificates and static bearer tokens.

Where the programs come from
  KUBEBUILDER_ASSETS names a folder holding kube-apiserver, kube-scheduler and
  kube-controller-manager (a relative path is taken from the current folder, else from the
  checkout's root). etcd is taken from that folder too if it is there, else from PATH.
  available() says whether they can be found, and why not.

What a ControlPlane gives
  url           https://127.0.0.1:PORT, the apiserver
  ca_file       the CA that signed the serving certificate
  kubeconfig    a kubeconfig for the admin user (group system:masters), with the CA inline;
                `tenon run --kubeconfig` and any Kubernetes client can use it
  api()         an Api client (JSON over urllib, verifying the CA), as the admin or as one of
                the extra users given to the constructor
  write_kubeconfig(user)  a kubeconfig for one of the extra users

Use it as a context manager, one per test module:

  with ControlPlane(scheduler=True, controller_manager=True,
                    users={"tenon": ["tenon:controllers"]}) as plane:
      plane.api().get("/api/v1/namespaces")

or through main() (unittest.main with the control plane started around the run, skipped or
failed cleanly when the programs are missing) and shared(). Startup takes 5 to 15 s;
every wait has a generous deadline. On exit every process is stopped (SIGTERM, then SIGKILL
after a timeout) and the temporary folder removed. When startup fails, or a suite run through
main() fails, the tail of each component's log is printed to stderr.
"""
import base64
import datetime
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
import uuid

ASSETS_ENV = "KUBEBUILDER_ASSETS"
APISERVER = "kube-apiserver"
SCHEDULER = "kube-scheduler"
CONTROLLER_MANAGER = "kube-controller-manager"
ETCD = "etcd"
CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

STARTUP_TIMEOUT_S = 60.0  # Each component; the apiserver alone takes 5-15 s.
STOP_TIMEOUT_S = 15.0  # SIGTERM, then SIGKILL after this long.
REQUEST_TIMEOUT_S = 30.0
POLL_S = 0.2
LOG_TAIL_LINES = 30
SKIP_RETURN_CODE = 77  # The suites' SKIP_RETURN_CODE in ctest.

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
ADMIN_USER = "admin"
ADMIN_GROUPS = ("system:masters",)

CONTENT_TYPES = {
    "json": "application/json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json-patch": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML, so a JSON body is fine.
}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


class ControlPlaneError(Exception):
    """The control plane could not be started, or a component died."""


# ---- finding the programs -----------------------------------------------------------------

def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def assets_dir():
    """-> $KUBEBUILDER_ASSETS as an absolute path ("" when unset). A relative value is taken
    from the current directory, or else from the checkout's root, since ctest runs each test
    in its build folder."""
    assets = os.environ.get(ASSETS_ENV, "")
    if not assets or os.path.isabs(assets) or os.path.isdir(assets):
        return os.path.abspath(assets) if assets else ""
    from_checkout = os.path.join(CHECKOUT, assets)
    return os.path.abspath(from_checkout if os.path.isdir(from_checkout) else assets)


def find_binary(name):
    """-> the path of `name` in $KUBEBUILDER_ASSETS, or (etcd only) on PATH; None if absent."""
    assets = assets_dir()
    if assets:
        path = os.path.join(assets, name)
        if _executable(path):
            return path
    if name == ETCD:
        return shutil.which(ETCD)
    return None


def _pki_backend():
    try:
        import cryptography  # noqa: F401
        return "cryptography"
    except ImportError:
        return "openssl" if shutil.which("openssl") else None


def available(scheduler=False, controller_manager=False):
    """-> (True, "") when a control plane with these components can be started, else
    (False, a reason naming what is missing)."""
    assets = assets_dir()
    if not assets:
        return False, "%s is not set (it names the folder holding %s)" % (ASSETS_ENV, APISERVER)
    if not os.path.isdir(assets):
        return False, "%s=%s is not a folder" % (ASSETS_ENV, assets)
    needed = [APISERVER] + ([SCHEDULER] if scheduler else []) + \
        ([CONTROLLER_MANAGER] if controller_manager else [])
    missing = [name for name in needed if find_binary(name) is None]
    if missing:
        return False, "%s=%s has no executable %s" % (ASSETS_ENV, assets, ", ".join(missing))
    if find_binary(ETCD) is None:
        return False, "etcd is neither in %s=%s nor on PATH" % (ASSETS_ENV, assets)
    if _pki_backend() is None:
        return False, "neither Python's cryptography package nor openssl is installed"
    return True, ""


def free_port():
    """A loopback TCP port free at the time of the call."""
    return free_ports(1)[0]


def free_ports(n):
    """`n` distinct loopback TCP ports free at the time of the call: each socket stays bound
    until all are chosen, so two calls in a row cannot hand out the same port."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_for(what, probe, timeout_s=STARTUP_TIMEOUT_S, poll_s=POLL_S):
    """-> probe()'s first truthy answer; AssertionError naming `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout_s, what))
        time.sleep(poll_s)


# ---- certificates and keys ----------------------------------------------------------------

def _make_pki_cryptography(folder):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def key():
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def write_key(k, name):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption()))

    def write_cert(c, name):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(c.public_bytes(serialization.Encoding.PEM))

    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1)
    ca_key = key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "envtest-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    server_key = key()
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                          "kube-apiserver")]))
              .issuer_name(ca_name).public_key(server_key.public_key())
              .serial_number(x509.random_serial_number())
              .not_valid_before(start).not_valid_after(end)
              .add_extension(x509.SubjectAlternativeName([
                  x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
                  critical=False)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                             critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                  ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
    sa_key = key()
    write_key(ca_key, "ca.key")
    write_cert(ca, "ca.crt")
    write_key(server_key, "apiserver.key")
    write_cert(server, "apiserver.crt")
    write_key(sa_key, "sa.key")
    with open(os.path.join(folder, "sa.pub"), "wb") as f:
        f.write(sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def _make_pki_openssl(folder):
    def run(*argv):
        result = subprocess.run(("openssl",) + argv, cwd=folder, capture_output=True, text=True)
        if result.returncode != 0:
            raise ControlPlaneError("openssl %s: %s" % (" ".join(argv), result.stderr.strip()))

    with open(os.path.join(folder, "apiserver.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n"
                "authorityKeyIdentifier=keyid\n")
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "1", "-subj", "/CN=envtest-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,digitalSignature,keyCertSign,cRLSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "apiserver.key",
        "-out", "apiserver.csr", "-subj", "/CN=kube-apiserver")
    run("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "1", "-sha256", "-extfile", "apiserver.ext",
        "-out", "apiserver.crt")
    run("genrsa", "-out", "sa.key", "2048")
    run("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")


def make_pki(folder, backend=None):
    """Writes ca.crt/ca.key, apiserver.crt/apiserver.key (SANs 127.0.0.1 and localhost) and the
    service-account RSA pair sa.key/sa.pub into `folder`, with Python's cryptography package if
    installed, else with openssl. -> the backend used."""
    backend = backend or _pki_backend()
    if backend == "cryptography":
        _make_pki_cryptography(folder)
    elif backend == "openssl":
        _make_pki_openssl(folder)
    else:
        raise ControlPlaneError("no way to make certificates: install Python's cryptography "
                                "package or openssl")
    return backend


# ---- the client ---------------------------------------------------------------------------

class ApiError(AssertionError):
    """A non-2xx answer: status is the HTTP status, body the decoded Status object."""

    def __init__(self, method, path, status, body):
        self.status, self.body = status, body
        message = body.get("message", body) if isinstance(body, dict) else body
        super().__init__("%s %s: %d %s" % (method, path, status, message))

    @property
    def reason(self):
        return self.body.get("reason", "") if isinstance(self.body, dict) else ""


class Api:
    """A small JSON client for one user of the apiserver, verifying its CA."""

    def __init__(self, server, token, ca_file, timeout_s=REQUEST_TIMEOUT_S):
        self.server, self.token, self.timeout_s = server.rstrip("/"), token, timeout_s
        self.context = ssl.create_default_context(cafile=ca_file)

    def call(self, method, path, body=None, content_type="json", accept="application/json",
             params=None, headers=None):
        """-> (HTTP status, decoded body, response headers); never raises for an HTTP status.
        content_type is a key of CONTENT_TYPES (json, merge, strategic, json-patch, apply) or
        a full media type; params are added to the query string."""
        url = self.server + path
        if params:
            url += ("&" if "?" in path else "?") + urllib.parse.urlencode(params)
        data = None
        all_headers = {"Authorization": "Bearer " + self.token, "Accept": accept}
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            all_headers["Content-Type"] = CONTENT_TYPES.get(content_type, content_type)
        all_headers.update(headers or {})
        request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s,
                                        context=self.context) as response:
                return response.status, _decode(response.read()), response.headers
        except urllib.error.HTTPError as e:
            return e.code, _decode(e.read()), e.headers

    def request(self, method, path, body=None, **options):
        """-> the decoded body of a 2xx answer; ApiError otherwise."""
        status, answer, _ = self.call(method, path, body, **options)
        if status // 100 != 2:
            raise ApiError(method, path, status, answer)
        return answer

    def get(self, path, **options):
        return self.request("GET", path, **options)

    def post(self, path, body, **options):
        return self.request("POST", path, body, **options)

    def put(self, path, body, **options):
        return self.request("PUT", path, body, **options)

    def patch(self, path, body, kind="merge", **options):
        """kind: merge, strategic, json-patch or apply."""
        return self.request("PATCH", path, body, content_type=kind, **options)

    def apply(self, path, obj, field_manager="envtest", force=True, **options):
        """Server-side apply of `obj` at its object path."""
        params = dict(options.pop("params", None) or {}, fieldManager=field_manager)
        if force:
            params["force"] = "true"
        return self.patch(path, obj, kind="apply", params=params, **options)

    def delete(self, path, **options):
        return self.request("DELETE", path, **options)

    def table(self, path, **options):
        """The server-side printed table of a list or object (what kubectl get shows)."""
        return self.get(path, accept=TABLE, **options)


def _decode(raw):
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


# ---- the control plane --------------------------------------------------------------------

class _Component:
    """One process, its output in a log file."""

    def __init__(self, name, argv, log_path):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.process = None

    def start(self):
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def check_running(self):
        if self.process is not None and self.process.poll() is not None:
            raise ControlPlaneError("%s exited with status %d" % (self.name,
                                                                  self.process.returncode))

    def stop(self, timeout_s=STOP_TIMEOUT_S):
        if self.process is None or self.process.poll() is not None:
            return
        _signal_group(self.process, signal.SIGTERM)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(self.process, signal.SIGKILL)
            self.process.wait()

    def tail(self, lines=LOG_TAIL_LINES):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError as e:
            return "(no log: %s)" % e
        return "\n".join(text.splitlines()[-lines:])


def _signal_group(process, sig):
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


class ControlPlane:
    """etcd and kube-apiserver, optionally kube-scheduler and kube-controller-manager.

    scheduler, controller_manager: also start these. Without the controller manager the
    apiserver runs without the ServiceAccount admission plugin, so pods are admitted although
    no namespace has a "default" ServiceAccount; with it, startup waits for default/default.
    users: extra token users, {name: [group, ...]}; each gets a random token.
    apiserver_flags: further kube-apiserver flags, e.g. ["--feature-gates=..."].
    pki: "cryptography" or "openssl" to force how certificates are made (default: the first
    available).
    """

    def __init__(self, scheduler=False, controller_manager=False, users=None,
                 apiserver_flags=(), startup_timeout_s=STARTUP_TIMEOUT_S, pki=None):
        self.with_scheduler, self.with_controller_manager = scheduler, controller_manager
        self.users = {ADMIN_USER: list(ADMIN_GROUPS)}
        for name, groups in (users or {}).items():
            if name == ADMIN_USER:
                raise ValueError("the user name %r is taken by the admin" % ADMIN_USER)
            self.users[name] = list(groups)
        self.tokens = {name: uuid.uuid4().hex for name in self.users}
        self.apiserver_flags = list(apiserver_flags)
        self.startup_timeout_s = startup_timeout_s
        self.pki = pki
        self.dir = None
        self.components = []
        self.url = self.ca_file = self.kubeconfig = None
        self.ports = {}

    # -- lifecycle --

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.dump_logs()
        self.stop()
        return False

    def start(self):
        ok, reason = available(self.with_scheduler, self.with_controller_manager)
        if not ok:
            raise ControlPlaneError("real control plane not available: " + reason)
        self.dir = tempfile.mkdtemp(prefix="envtest-")
        try:
            self._start()
        except BaseException as e:
            if isinstance(e, (ControlPlaneError, AssertionError)):
                sys.stderr.write("control plane failed to start: %s\n" % e)
            self.dump_logs()
            self.stop()
            raise

    def _start(self):
        self.pki = make_pki(self.dir, self.pki)
        self.ca_file = self._path("ca.crt")
        with open(self._path("tokens.csv"), "w") as f:
            for name, groups in self.users.items():
                f.write('%s,%s,%s,"%s"\n' % (self.tokens[name], name, name, ",".join(groups)))
        self.ports = dict(zip(("etcd", "etcd-peer", "apiserver"), free_ports(3)))
        self._start_etcd()
        self._start_apiserver()
        self.kubeconfig = self.write_kubeconfig(ADMIN_USER)
        if self.with_scheduler:
            self._start_scheduler()
        if self.with_controller_manager:
            self._start_controller_manager()

    def stop(self):
        """Stops every component (last started first) and removes the temporary folder."""
        for component in reversed(self.components):
            component.stop()
        self.components = []
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def dump_logs(self, lines=LOG_TAIL_LINES, out=None):
        """Writes the tail of each component's log (to stderr by default)."""
        out = out or sys.stderr
        for component in self.components:
            out.write("---- last %d lines of %s's log ----\n%s\n"
                      % (lines, component.name, component.tail(lines)))
        out.flush()

    # -- the components --

    def _path(self, name):
        return os.path.join(self.dir, name)

    def _launch(self, name, argv):
        component = _Component(name, argv, self._path(name + ".log"))
        self.components.append(component)
        component.start()
        return component

    def _wait_healthy(self, component, probe):
        def check():
            component.check_running()
            return probe()
        wait_for("%s to become healthy" % component.name, check, self.startup_timeout_s)

    def _start_etcd(self):
        client = "http://127.0.0.1:%d" % self.ports["etcd"]
        peer = "http://127.0.0.1:%d" % self.ports["etcd-peer"]
        etcd = self._launch(ETCD, [
            find_binary(ETCD), "--data-dir", self._path("etcd"), "--name", "default",
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", "default=" + peer])
        self._wait_healthy(etcd, lambda: _http_ok(client + "/health"))

    def _start_apiserver(self):
        port = self.ports["apiserver"]
        self.url = "https://127.0.0.1:%d" % port
        apiserver = self._launch(APISERVER, [
            find_binary(APISERVER),
            "--etcd-servers", "http://127.0.0.1:%d" % self.ports["etcd"],
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(port),
            "--cert-dir", self._path("apiserver-certs"),
            "--tls-cert-file", self._path("apiserver.crt"),
            "--tls-private-key-file", self._path("apiserver.key"),
            "--client-ca-file", self.ca_file,
            "--token-auth-file", self._path("tokens.csv"),
            "--authorization-mode", "Node,RBAC",
            "--service-account-issuer", SERVICE_ACCOUNT_ISSUER,
            "--service-account-key-file", self._path("sa.pub"),
            "--service-account-signing-key-file", self._path("sa.key"),
            "--api-audiences", SERVICE_ACCOUNT_ISSUER,
            "--service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE,
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
        ] + ([] if self.with_controller_manager else [
            # Without the controller manager no namespace gets its "default" ServiceAccount,
            # and the ServiceAccount admission plugin would refuse every pod.
            "--disable-admission-plugins", "ServiceAccount",
        ]) + self.apiserver_flags)
        admin = self.api()

        def ready():
            status, body, _ = _quiet_call(admin, "GET", "/readyz")
            return status == 200 and body == "ok"
        self._wait_healthy(apiserver, ready)

    def _kube_component_argv(self, name, port):
        kubeconfig = self.kubeconfig
        return [find_binary(name), "--kubeconfig", kubeconfig,
                "--authentication-kubeconfig", kubeconfig,
                "--authorization-kubeconfig", kubeconfig,
                "--bind-address", "127.0.0.1", "--secure-port", str(port),
                "--cert-dir", self._path(name + "-certs"), "--leader-elect=false"]

    def _start_scheduler(self):
        port = self.ports["scheduler"] = free_port()
        scheduler = self._launch(SCHEDULER, self._kube_component_argv(SCHEDULER, port))
        self._wait_healthy(scheduler, lambda: _https_healthz(port))

    def _start_controller_manager(self):
        port = self.ports["controller-manager"] = free_port()
        manager = self._launch(CONTROLLER_MANAGER, self._kube_component_argv(
            CONTROLLER_MANAGER, port) + [
            "--controllers", "*,-nodeipam,-service,-route,-cloud-node-lifecycle,"
                             "-bootstrapsigner,-tokencleaner",
            "--use-service-account-credentials=true",
            "--service-account-private-key-file", self._path("sa.key"),
            "--root-ca-file", self.ca_file,
            "--cluster-signing-cert-file", self.ca_file,
            "--cluster-signing-key-file", self._path("ca.key"),
            "--allocate-node-cidrs=false"])
        self._wait_healthy(manager, lambda: _https_healthz(port))
        # Pods are admitted once their namespace's ServiceAccount exists.
        admin = self.api()
        self._wait_healthy(manager, lambda: _quiet_call(
            admin, "GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200)

    # -- clients --

    def token(self, user=ADMIN_USER):
        return self.tokens[user]

    def api(self, user=ADMIN_USER, timeout_s=REQUEST_TIMEOUT_S):
        """An Api client authenticated as `user` (the admin by default)."""
        return Api(self.url, self.tokens[user], self.ca_file, timeout_s)

    def write_kubeconfig(self, user=ADMIN_USER, path=None):
        """Writes a kubeconfig for `user` (CA inline, bearer token) -> its path."""
        path = path or self._path("kubeconfig-%s.yaml" % user)
        with open(self.ca_file, "rb") as f:
            ca_data = base64.b64encode(f.read()).decode()
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "envtest", "cluster": {
                "server": self.url, "certificate-authority-data": ca_data}}],
            "users": [{"name": user, "user": {"token": self.tokens[user]}}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": user}}],
            "current-context": "envtest",
        }
        with open(path, "w") as f:
            json.dump(config, f, indent=2)  # JSON is YAML: every kubeconfig reader takes it.
        return path


def _quiet_call(api, method, path):
    try:
        return api.call(method, path)
    except (OSError, urllib.error.URLError, ssl.SSLError):
        return 0, None, None


def _http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def _https_healthz(port):
    """GET /healthz on a component's secure port without verifying its self-signed cert."""
    context = ssl._create_unverified_context()
    try:
        with urllib.request.urlopen("https://127.0.0.1:%d/healthz" % port, timeout=2,
                                    context=context) as response:
            return response.status == 200 and response.read() == b"ok"
    except (OSError, urllib.error.URLError, ssl.SSLError):
        return False


# ---- suites with one control plane per module ---------------------------------------------

_shared = None


def shared():
    """The control plane main() started for this run (tests use it in setUpClass)."""
    if _shared is None:
        raise unittest.SkipTest("no control plane: run this suite through controlplane.main()")
    return _shared


def main(**options):
    """unittest.main for a suite against a real control plane. ControlPlane(**options) is
    started once for the whole run (shared() returns it) and stopped at the end.

    When the programs are missing it prints "real control plane not available: REASON" and
    exits with SKIP_RETURN_CODE, so ctest reports the suite as skipped; when the environment
    variable CI is set to anything non-empty it exits 1 instead, because CI must run it. When
    a test fails, the tail of each component's log is printed."""
    global _shared
    ok, reason = available(options.get("scheduler", False),
                           options.get("controller_manager", False))
    if not ok:
        print("real control plane not available: %s" % reason, flush=True)
        sys.exit(1 if os.environ.get("CI") else SKIP_RETURN_CODE)
    started = time.monotonic()
    with ControlPlane(**options) as plane:
        print("control plane up in %.1f s at %s" % (time.monotonic() - started, plane.url),
              flush=True)
        _shared = plane
        try:
            program = unittest.main(module="__main__", exit=False, verbosity=2)
        finally:
            _shared = None
        success = program.result.wasSuccessful()
        if not success:
            plane.dump_logs()
    sys.exit(0 if success else 1)
