/**
 * The grove store the drop-ins use: one client for `GROVE_URL` (and `GROVE_TOKEN`), made on
 * first use; `GROVE_URL=in-process:DIR` opens the store at DIR in this process (`openStore`),
 * and with `GROVE_STORE_PER_PROCESS=1` the store DIR/PID, one per process (pi's suite runs its
 * files in several worker processes; a store belongs to one), at `GROVE_DURABILITY` (default sync).
 */
import { join } from "node:path";
import { GroveClient } from "../src/client.js";
import { openStore } from "../src/native.js";

let shared: GroveClient | undefined;

export function groveClient(): GroveClient {
	const url = process.env.GROVE_URL;
	if (!shared && url?.startsWith("in-process:")) {
		const dir = url.slice("in-process:".length);
		const durability = process.env.GROVE_DURABILITY;
		shared = openStore(process.env.GROVE_STORE_PER_PROCESS === "1" ? join(dir, String(process.pid)) : dir, {
			durability: durability === "none" || durability === "group" ? durability : "sync",
		});
	}
	shared ??= GroveClient.fromEnv();
	return shared;
}
