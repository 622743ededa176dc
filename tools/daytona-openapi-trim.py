#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Trim Daytona's published OpenAPI documents to what cordon uses.

    tools/daytona-openapi-trim.py SRC_DIR [OUT_DIR]

SRC_DIR holds the documents published in daytona/clients v0.205.1 (openapi-specs/api.json and
openapi-specs/toolbox.json); OUT_DIR defaults to backends/daytona/openapi. Writes:

- api.json: the control-plane operations cordon calls, every schema they reference
  (transitively), the security schemes, servers, info and the used tags as published.
- toolbox.json: the toolbox operations cordon calls, converted from Swagger 2.0 to OpenAPI 3.0.1
  and each path prefixed with /toolbox/{sandboxId} (a path parameter added to each operation),
  so that Prism serves them at {toolboxProxyUrl}/{sandboxId}/... as Daytona's proxy does.

Python 3 standard library only; the output is deterministic (the inputs' key order is kept).
backends/daytona/openapi/README.md says what was trimmed or changed and why.
"""

import copy
import hashlib
import json
import os
import sys

ORIGIN = {
    "repository": "https://github.com/daytona/clients",
    "tag": "v0.205.1",
    "commit": "d94a1281",
}
# sha256 of the documents this script was written against; another version is refused unless
# --allow-other is given (then check the result by hand and update the README).
EXPECTED_SHA256 = {
    "api.json": "7682a9cefcd12810da736ea76527acc4e6e9c32dd53b39337bfbb1708b7b48a3",
    "toolbox.json": "3dbcb22f53b0205deedc9310dc2e87aa346cf28db9372508c28919b70a13b3f6",
}

# Control plane: path -> the methods cordon calls (docs/daytona.md).
API_OPERATIONS = {
    "/sandbox": ["get", "post"],
    "/sandbox/{sandboxIdOrName}": ["get", "delete"],
    "/sandbox/{sandboxId}/toolbox-proxy-url": ["get"],
}
# Toolbox: path (relative to {toolboxProxyUrl}/{sandboxId}) -> methods.
TOOLBOX_OPERATIONS = {
    "/process/execute": ["post"],
    "/files/upload-v2": ["post"],
    "/files/download": ["get"],
    "/files": ["delete"],
    "/files/folder": ["post"],
}
TOOLBOX_PREFIX = "/toolbox/{sandboxId}"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def die(msg):
    print(f"daytona-openapi-trim: {msg}", file=sys.stderr)
    sys.exit(1)


def load(src_dir, name, allow_other):
    path = os.path.join(src_dir, name)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}")
    digest = hashlib.sha256(raw).hexdigest()
    if digest != EXPECTED_SHA256[name] and not allow_other:
        die(
            f"{path}: sha256 {digest} is not the v0.205.1 document's "
            f"({EXPECTED_SHA256[name]}); pass --allow-other to trim it anyway"
        )
    try:
        return json.loads(raw), digest
    except ValueError as e:
        die(f"{path}: not JSON: {e}")


def refs_in(node):
    """Every $ref string anywhere in node."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            r = n.get("$ref")
            if isinstance(r, str):
                out.append(r)
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)
    return out


def closure(roots, table, prefix):
    """Names of the entries of table reachable from roots through '$ref: prefix<name>'."""
    seen = set()
    todo = [r for r in refs_in(roots)]
    while todo:
        r = todo.pop()
        if not r.startswith(prefix):
            die(f"unexpected reference {r}")
        name = r[len(prefix):]
        if name in seen:
            continue
        if name not in table:
            die(f"dangling reference {r}")
        seen.add(name)
        todo.extend(refs_in(table[name]))
    return seen


def pick_paths(doc, wanted):
    paths = {}
    for path, methods in wanted.items():
        item = doc["paths"].get(path)
        if item is None:
            die(f"path {path} is not in the document")
        kept = {}
        for key, value in item.items():
            if key in HTTP_METHODS:
                if key in methods:
                    kept[key] = value
            else:
                kept[key] = value  # path-level parameters, summary...
        missing = [m for m in methods if m not in kept]
        if missing:
            die(f"{path} has no {', '.join(missing)}")
        paths[path] = kept
    return paths


def trim_api(doc, digest):
    if not str(doc.get("openapi", "")).startswith("3."):
        die("api.json is not OpenAPI 3")
    paths = pick_paths(doc, API_OPERATIONS)
    schemas = doc["components"]["schemas"]
    names = closure(paths, schemas, "#/components/schemas/")
    used_tags = {t for item in paths.values() for op in item.values() if isinstance(op, dict) for t in op.get("tags", [])}
    out = {}
    for key, value in doc.items():
        if key == "paths":
            out["paths"] = paths
        elif key == "tags":
            out["tags"] = [t for t in value if t.get("name") in used_tags]
        elif key == "components":
            comp = {}
            for ckey, cvalue in value.items():
                if ckey == "schemas":
                    comp["schemas"] = {k: v for k, v in cvalue.items() if k in names}
                elif ckey == "securitySchemes":
                    comp["securitySchemes"] = cvalue
            out["components"] = comp
        else:
            out[key] = value
    out["x-cordon-origin"] = dict(
        ORIGIN,
        file="openapi-specs/api.json",
        sha256=digest,
        changes="trimmed to the operations cordon calls and the schemas they reference; nothing else changed",
    )
    return out


# --- Swagger 2.0 -> OpenAPI 3.0.1, for the constructs the kept toolbox operations use ---------

SW_REF = "#/definitions/"
OAS_REF = "#/components/schemas/"


def convert_schema(s):
    """A Swagger 2.0 schema as an OpenAPI 3.0 schema: '$ref's moved to components, 'type: file'
    as a binary string. Nothing else differs for these schemas (checked in main())."""
    if isinstance(s, list):
        return [convert_schema(x) for x in s]
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k == "$ref":
            if not v.startswith(SW_REF):
                die(f"unexpected reference {v}")
            out[k] = OAS_REF + v[len(SW_REF):]
        elif k == "type" and v == "file":
            out["type"] = "string"
            out["format"] = "binary"
        elif k in ("properties", "definitions"):
            out[k] = {pk: convert_schema(pv) for pk, pv in v.items()}
        else:
            out[k] = convert_schema(v)
    return out


PARAM_SCHEMA_KEYS = ("type", "format", "items", "enum", "default", "minimum", "maximum", "pattern")


def convert_operation(op, global_consumes, global_produces):
    # Only what these operations use; anything else is refused rather than mistranslated.
    known = {"description", "consumes", "produces", "tags", "summary", "operationId", "parameters", "responses"}
    extra = set(op) - known
    if extra:
        die(f"{op.get('operationId')}: unhandled keys {sorted(extra)}")
    consumes = op.get("consumes", global_consumes) or ["application/json"]
    produces = op.get("produces", global_produces)
    out = {}
    for k in ("description", "tags", "summary", "operationId"):
        if k in op:
            out[k] = op[k]
    params, form = [], []
    body = None
    for p in op.get("parameters", []):
        where = p["in"]
        if where == "body":
            body = {"content": {mt: {"schema": convert_schema(p["schema"])} for mt in consumes}}
            if "description" in p:
                body["description"] = p["description"]
            if p.get("required"):
                body["required"] = True
        elif where == "formData":
            form.append(p)
        elif where in ("query", "path", "header"):
            q = {"name": p["name"], "in": where}
            if "description" in p:
                q["description"] = p["description"]
            if p.get("required") or where == "path":
                q["required"] = True
            q["schema"] = convert_schema({k: p[k] for k in PARAM_SCHEMA_KEYS if k in p})
            extra = set(p) - {"name", "in", "description", "required"} - set(PARAM_SCHEMA_KEYS)
            if extra:
                die(f"{op.get('operationId')}: parameter {p['name']}: unhandled keys {sorted(extra)}")
            params.append(q)
        else:
            die(f"{op.get('operationId')}: parameter in {where}")
    if form:
        props, required = {}, []
        for p in form:
            prop = convert_schema({k: p[k] for k in PARAM_SCHEMA_KEYS if k in p})
            if "description" in p:
                prop = dict({"description": p["description"]}, **prop)
            props[p["name"]] = prop
            if p.get("required"):
                required.append(p["name"])
        schema = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        body = {"content": {mt: {"schema": schema} for mt in consumes}}
    if params:
        out["parameters"] = params
    if body is not None:
        out["requestBody"] = body
    responses = {}
    for code, r in op["responses"].items():
        extra = set(r) - {"description", "schema"}
        if extra:
            die(f"{op.get('operationId')}: response {code}: unhandled keys {sorted(extra)}")
        nr = {"description": r.get("description", "")}
        if "schema" in r:
            # Swagger 2.0 gives one 'produces' list for every response of an operation; an
            # operation without one gets '*/*', as openapi-generator's conversion does.
            nr["content"] = {mt: {"schema": convert_schema(r["schema"])} for mt in (produces or ["*/*"])}
        responses[code] = nr
    out["responses"] = responses
    return out


def fix_error_media_types(paths):
    """The one change to the published contract (README.md, "Fixes"): Swagger 2.0 has a single
    'produces' list per operation, so GET /files/download, which produces
    application/octet-stream, declares its ErrorResponse (a JSON object) as octet-stream too.
    The daemon sends its errors as application/json (gin's c.JSON), and Prism refuses both
    readings: a JSON error is "media type does not match" and an octet-stream one "must be
    object". Error responses whose schema is ErrorResponse are declared application/json."""
    for item in paths.values():
        for op in item.values():
            for code, r in op["responses"].items():
                if code.startswith("2") or "content" not in r:
                    continue
                for mt, media in list(r["content"].items()):
                    if mt in ("application/json", "*/*"):
                        continue
                    if media["schema"] == {"$ref": OAS_REF + "ErrorResponse"}:
                        r["content"] = {"application/json": media}


def trim_toolbox(doc, digest):
    if doc.get("swagger") != "2.0":
        die("toolbox.json is not Swagger 2.0")
    for unhandled in ("host", "basePath", "parameters", "responses", "security"):
        if unhandled in doc:
            die(f"toolbox.json: top-level '{unhandled}' is not handled")
    picked = pick_paths(doc, TOOLBOX_OPERATIONS)
    defs = doc.get("definitions", {})
    names = closure(picked, defs, SW_REF)
    sandbox_id = {
        "name": "sandboxId",
        "in": "path",
        "required": True,
        "description": "ID of the sandbox (the path prefix Daytona's proxy routes on)",
        "schema": {"type": "string"},
    }
    paths = {}
    for path, item in picked.items():
        new_item = {}
        for method, op in item.items():
            if method not in HTTP_METHODS:
                die(f"{path}: path-level '{method}' is not handled")
            nop = convert_operation(op, doc.get("consumes"), doc.get("produces"))
            nop["parameters"] = [copy.deepcopy(sandbox_id)] + nop.get("parameters", [])
            # Keep the key order of the published conversion: parameters before requestBody.
            ordered = {}
            for k in ("description", "operationId", "parameters", "requestBody", "responses", "summary", "tags"):
                if k in nop:
                    ordered[k] = nop[k]
            new_item[method] = ordered
        paths[TOOLBOX_PREFIX + path] = new_item
    fix_error_media_types(paths)
    out = {
        "openapi": "3.0.1",
        "info": doc["info"],
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": {k: convert_schema(v) for k, v in defs.items() if k in names},
            "securitySchemes": doc.get("securityDefinitions", {}),
        },
        "x-cordon-origin": dict(
            ORIGIN,
            file="openapi-specs/toolbox.json",
            sha256=digest,
            changes="trimmed to the operations cordon calls; converted to OpenAPI 3.0.1; paths prefixed with "
            "/toolbox/{sandboxId}; ErrorResponse bodies of GET /files/download declared application/json",
        ),
    }
    return out


def write(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def main(argv):
    args = [a for a in argv[1:] if a != "--allow-other"]
    allow_other = len(args) != len(argv) - 1
    if len(args) not in (1, 2) or args[0].startswith("-"):
        print("usage: " + __doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src = args[0]
    out_dir = args[1] if len(args) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "backends", "daytona", "openapi")
    api, api_sha = load(src, "api.json", allow_other)
    toolbox, tb_sha = load(src, "toolbox.json", allow_other)
    os.makedirs(out_dir, exist_ok=True)
    write(os.path.join(out_dir, "api.json"), trim_api(api, api_sha))
    write(os.path.join(out_dir, "toolbox.json"), trim_toolbox(toolbox, tb_sha))
    print(f"wrote {os.path.normpath(out_dir)}/api.json and toolbox.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
