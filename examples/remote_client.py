"""Ask a running ``groundlock serve`` for an answer, as a LangChain app would: RemoteRunnable.

    groundlock serve --port 8000 &                  # in one shell (offline model)
    python examples/remote_client.py [URL]          # in another

With API keys configured on the server (``GROUNDLOCK_API_KEYS``), set ``GROUNDLOCK_API_KEY``
here. The client sees only the public response: no chunk text, score, prompt or raw model
text is served.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from langserve import RemoteRunnable

BUNDLE = Path(__file__).parent / "data" / "hydraulic_pump_bundle.json"


def main() -> None:
    """Invoke the served chain once and print the answer with its citations."""
    url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
    key = os.environ.get("GROUNDLOCK_API_KEY")
    remote = RemoteRunnable(f"{url}/answer", headers={"X-API-Key": key} if key else None)
    response = remote.invoke(json.loads(BUNDLE.read_text(encoding="utf-8")))
    print(response["status"], response["failure_reason"] or "")
    print(response["answer"])
    for citation in response["citations"]:
        print(f"  [{citation['anchor']}] {citation['source_reference']}")


if __name__ == "__main__":
    main()
