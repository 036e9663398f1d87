"""`PUT /api/v1/config/environments/<id>/facts`: the facts of many nodes in one commit.

The REST form of `gitstore facts upload` (one node or a whole directory of nodes). Body::

    {"message": "...",                                          (optional)
     "shared": {"astute": {"nodes": [...], ...}},               (optional)
     "nodes": {"1": {"astute": {...}, "globals": "a: 1\\n"}, "node-2.example": {...}}}

A node is named by id or inventory fqdn, as the unknown-node rule allows. A resource's document
is a JSON object, or the text of its YAML file as the machine that wrote it wrote it: read as
PyYAML and Ruby Psych read it (a repeated key keeps its last value, and the answer's `warnings`
name each one). `shared[resource]` holds top-level entries every node uploading that resource
has too, so a cluster's lists travel once. One bad file refuses the whole upload, naming its
node and resource; nothing is committed.
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from gitstore.api.http import app_store, author, json_body

bp = Blueprint("facts", __name__, url_prefix="/api/v1/config/environments")


@bp.put("/<int:env_id>/facts")
def upload_facts(env_id: int):
    result = app_store().facts.upload_body(env_id, json_body(), author())
    response = jsonify(result)
    if result["commit"]:
        response.headers["X-Gitstore-Commit"] = result["commit"]
    if result["version"] is not None:
        response.headers["X-Gitstore-Version"] = str(result["version"])
    return response
