// pi's own CLI code on one session file: SessionManager.open + buildSessionContext, the
// context written as JSON (what `grove context --json --preset cli` writes).
import { SessionManager } from "@earendil-works/pi-coding-agent";

const file = process.argv[2];
if (!file) throw new Error("usage: node pi-context.mjs SESSION.jsonl");
const ctx = SessionManager.open(file).buildSessionContext();
process.stdout.write(JSON.stringify(ctx) + "\n");
