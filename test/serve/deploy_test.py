#!/usr/bin/python3
"""Checks deploy/: every Kubernetes manifest parses (python3-yaml), and the containers' arguments,
ports and probes match kiln-serve: the arguments are options kiln-serve knows, the probe and
Service ports are the port kiln-serve is told to listen on, and every probe path answers 200 on
a running kiln-serve started with the same arguments. Usage:
deploy_test.py --bin BUILD/bin --root SOURCE --artifact cnn.kiln"""
import argparse, glob, http.client, json, os, re, subprocess, sys, threading, time

import yaml

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def containers(doc):
    spec = doc.get("spec", {})
    if doc["kind"] == "Deployment":
        return spec["template"]["spec"]["containers"]
    if doc["kind"] == "ServingRuntime":
        return spec["containers"]
    return []


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--artifact", required=True)
    a = p.parse_args()
    serve = os.path.join(a.bin, "kiln-serve")
    help_text = subprocess.run([serve, "--help"], capture_output=True, text=True, check=True).stdout
    known = set(re.findall(r"--[a-z-]+", help_text))
    docs = []
    for path in sorted(glob.glob(os.path.join(a.root, "deploy/kubernetes/*.yaml"))):
        with open(path) as f:
            docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(f) if d]
    kinds = {d["kind"] for _, d in docs}
    check({"Deployment", "Service", "ServingRuntime", "InferenceService"} <= kinds, "manifest kinds: %s" % kinds)
    probe_paths = set()
    container_ports = {}
    for name, d in docs:
        for c in containers(d):
            args = c["args"]
            for x in args:
                if x.startswith("--"):
                    check(x in known, "%s: %s is a kiln-serve option" % (name, x))
            port = int(args[args.index("--port") + 1])
            check(args[args.index("--host") + 1] == "0.0.0.0", "%s: listens on all interfaces in the pod" % name)
            ports = {pp.get("name", str(pp["containerPort"])): pp["containerPort"] for pp in c["ports"]}
            check(list(ports.values()) == [port], "%s: containerPort %s equals --port %d" % (name, ports, port))
            container_ports.update(ports)
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                if probe not in c:
                    continue
                g = c[probe]["httpGet"]
                pp = g["port"]
                check((ports.get(pp) if isinstance(pp, str) else pp) == port, "%s: %s port is the server's" % (name, probe))
                probe_paths.add(g["path"])
            check("livenessProbe" in c and "readinessProbe" in c, "%s: liveness and readiness probes" % name)
            if d["kind"] == "ServingRuntime":
                check(d["spec"]["protocolVersions"] == ["v2"], "ServingRuntime speaks v2")
        if d["kind"] == "Service":
            for sp in d["spec"]["ports"]:
                check(sp["targetPort"] in container_ports, "Service targetPort %s names a container port" % sp["targetPort"])
        if d["kind"] == "InferenceService":
            check(d["spec"]["predictor"]["model"]["runtime"] in
                  [x["metadata"]["name"] for _, x in docs if x["kind"] == "ServingRuntime"], "InferenceService runtime exists")
    docker = open(os.path.join(a.root, "deploy/Dockerfile")).read()
    check("EXPOSE 8080" in docker, "Dockerfile exposes the port the manifests use")
    # The example config is one kiln-serve reads (it fails only at loading the absent artifacts).
    r = subprocess.run([serve, "--config", os.path.join(a.root, "deploy/kiln-serve.example.json"), "--port", "0"],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode == 1 and "model 'lm'" in r.stderr and "unknown" not in r.stderr,
          "example config accepted up to loading: %s" % r.stderr[-300:])

    # Every probe path answers 200 on a running server.
    proc = subprocess.Popen([serve, "--model", "cnn=" + a.artifact, "--port", "0", "--threads", "1"],
                            stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r'"event":"listening".*"port":(\d+)', line)
        if m:
            port = int(m.group(1))
        if '"event":"ready"' in line:
            break
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    try:
        for path in sorted(probe_paths):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", path)
            st = c.getresponse().status
            check(st == 200, "probe %s answers 200 (%d)" % (path, st))
    finally:
        proc.terminate()
        check(proc.wait(10) == 0, "kiln-serve exits 0 on SIGTERM")
    check(len(probe_paths) >= 2, "probes checked: %s" % sorted(probe_paths))
    print("%d failure(s); probes %s" % (len(FAILS), sorted(probe_paths)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
