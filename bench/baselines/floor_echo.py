"""The floor: a bare Python loop that answers every JSON-RPC request line with an empty result."""

import json
import sys


def main() -> None:
    out = sys.stdout
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" in msg and "method" in msg:
            result = {"protocolVersion": 1, "agentCapabilities": {}} if msg["method"] == "initialize" else {}
            out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
