"""deploy/ without Docker: the files parse, and their ports, HITL_* variables and probe paths
agree with gateway/config.py and the app's routes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import load_settings
from gateway.http import api

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _routes() -> set[str]:
    return {getattr(r, "path", "") for r in api.routes}


def _yaml(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def _k8s() -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in _yaml(f"k8s/{path.name}"):
            docs[doc["kind"]] = doc
    return docs


def _env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def _hitl(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("HITL_")}


def _loads(env: dict[str, str]) -> Any:
    """Every HITL_* name is a real config key and every value is accepted: load_settings would
    raise ConfigError naming the key otherwise. Unknown HITL_* names are caught here too."""
    from gateway.config import sections

    known = {f"HITL_{s}_{k}".upper() for s, keys in sections().items() for k in keys}
    unknown = {k for k in env if k not in known and not k.startswith(("HITL_POLICIES_", "HITL_WORKERS_"))}
    assert not unknown, f"not config keys: {sorted(unknown)}"
    return load_settings(None, env=env)


def test_kubernetes_manifests_agree_with_config_and_routes() -> None:
    docs = _k8s()
    assert {"Deployment", "Service", "Secret", "PodDisruptionBudget"} <= set(docs)
    deployment, service, secret, pdb = (docs[k] for k in ("Deployment", "Service", "Secret", "PodDisruptionBudget"))
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert [s["secretRef"]["name"] for s in container["envFrom"]] == [secret["metadata"]["name"]]
    env.update({k: v for k, v in secret["stringData"].items()})
    settings = _loads(_hitl(env))
    assert settings.store.url.startswith("postgresql://")
    assert settings.server.host == "0.0.0.0"
    (port,) = container["ports"]
    assert port["containerPort"] == settings.server.port
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == port["name"]
        assert container[probe]["httpGet"]["path"] in _routes()
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


def test_compose_agrees_with_config_and_proxy() -> None:
    (compose,) = _yaml("docker-compose.yml")
    services = compose["services"]
    gateways = [name for name in services if name.startswith("gateway-")]
    assert len(gateways) == 2 and "postgres" in services and "proxy" in services
    example = _env_file(DEPLOY / ".env.example")
    for name in gateways:
        raw = services[name]["environment"]
        env = {k: _expand(str(v), example) for k, v in raw.items()}
        settings = _loads(_hitl(env))
        assert settings.store.url.startswith("postgresql://") and "@postgres:5432/" in settings.store.url
        assert services[name]["expose"] == [str(settings.server.port)]
    caddy = (DEPLOY / "Caddyfile").read_text()
    upstreams = re.findall(r"(gateway-\d+):(\d+)", caddy)
    assert sorted(upstreams) == sorted((g, "8080") for g in gateways)
    assert re.search(r"health_uri (\S+)", caddy)[1] in _routes()  # type: ignore[index]
    assert "./Caddyfile:/etc/caddy/Caddyfile:ro" in services["proxy"]["volumes"]


def _expand(value: str, env: dict[str, str]) -> str:
    """${NAME}, ${NAME:-default} and ${NAME:?error}, as docker compose does."""

    def one(m: re.Match[str]) -> str:
        name, op, arg = m[1], m[2] or "", m[3] or ""
        if name in env and (env[name] or op != ":-"):
            return env[name]
        return arg if op == ":-" else ""

    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", one, value)


def test_dockerfile_runs_as_non_root_with_a_healthcheck() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    env = dict(re.findall(r"(HITL_\w+)=(\S+)", text))
    settings = _loads({**env, "HITL_SECURITY_SECRET_KEYS": "x" * 16})
    assert re.search(r"^EXPOSE (\d+)$", text, re.M)[1] == str(settings.server.port)  # type: ignore[index]
    assert re.search(r"^USER (\d+)", text, re.M)[1] != "0"  # type: ignore[index]
    health = re.search(r"HEALTHCHECK[^\n]*\\\n\s*CMD (.*)", text)
    assert health is not None and f"127.0.0.1:{settings.server.port}/healthz" in health[1]
    assert "/healthz" in _routes()
    assert "[postgres,email]" in text  # the image can talk to PostgreSQL and send e-mail


def test_systemd_unit_and_env_agree_with_config() -> None:
    text = (DEPLOY / "systemd" / "hitl-gateway.service").read_text()
    env = dict(re.findall(r"^Environment=(HITL_\w+)=(\S+)$", text, re.M))
    env.update(_hitl(_env_file(DEPLOY / "systemd" / "env.example")))
    settings = _loads(env)
    assert settings.store.url.startswith("postgresql://")
    sections = re.findall(r"^\[(\w+)\]$", text, re.M)
    assert sections == ["Unit", "Service", "Install"]
    assert re.search(r"^User=(?!root)\S+$", text, re.M)
    assert re.search(r"^ExecStart=\S+hitl-gateway serve$", text, re.M)


@pytest.mark.parametrize("name", ["k8s/deployment.yaml", "k8s/service.yaml", "k8s/pdb.yaml", "k8s/secret.example.yaml"])
def test_manifests_are_single_documents_with_names(name: str) -> None:
    (doc,) = _yaml(name)
    assert doc["apiVersion"] and doc["metadata"]["name"] == "hitl-gateway"
