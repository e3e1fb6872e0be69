/**
 * pi's own in-memory storage and repo against grove, on random operation sequences
 * (test/differential.ts). `GROVE_DIFF_SEEDS` sets the number of seeds per backend (default
 * 200 for the adapter, 100 for the exclusive adapter and for the drop-ins) and `GROVE_DIFF_STEPS` the steps per seed (25);
 * `GROVE_DIFF_SEED` runs one seed.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, it } from "vitest";
import { InMemorySessionRepo as DropInRepo } from "../pi-compat/memory-repo.js";
import { InMemorySessionStorage as DropInStorage } from "../pi-compat/memory-storage.js";
import { GroveClient } from "../src/client.js";
import { GroveSessionRepo, GroveSessionStorage } from "../src/pi.js";
import { testClient, testUrl } from "./clients.js";
import { type Backend, DifferentialRun } from "./differential.js";

process.env.GROVE_URL = testUrl();
const client = testClient();

const steps = Number(process.env.GROVE_DIFF_STEPS ?? 25);
const only = process.env.GROVE_DIFF_SEED === undefined ? undefined : Number(process.env.GROVE_DIFF_SEED);

function seeds(count: number): number[] {
	if (only !== undefined) return [only];
	return Array.from({ length: Number(process.env.GROVE_DIFF_SEEDS ?? count) }, (_, i) => i + 1);
}

const adapter: Backend = {
	name: "adapter",
	repo: (scope) => new GroveSessionRepo(client, { cwd: scope }),
	// Outside the repo: a grove id of its own, so that repo.open of its metadata fails as in pi.
	storage: ({ metadata, entries, scope }) =>
		GroveSessionStorage.create(client, { metadata, entries, cwd: scope, id: `storage-${randomUUID()}` }),
};

/** The adapter in its single-writer mode: the leaf and fresh ids kept by the storage object. */
const exclusive: Backend = {
	name: "exclusive",
	repo: (scope) => new GroveSessionRepo(client, { cwd: scope, exclusive: true }),
	storage: ({ metadata, entries, scope }) =>
		GroveSessionStorage.create(client, {
			metadata,
			entries,
			cwd: scope,
			id: `storage-${randomUUID()}`,
			exclusive: true,
		}),
};

const dropIn: Backend = {
	name: "dropin",
	repo: () => new DropInRepo(),
	storage: async ({ metadata, entries }) => new DropInStorage(entries ? { metadata, entries } : { metadata }),
};

beforeAll(async () => {
	await client.health();
});

afterAll(() => client.close());

describe("differential: GroveSessionStorage/GroveSessionRepo against pi's in-memory ones", () => {
	it.each(seeds(200))("seed %i", async (seed) => {
		await new DifferentialRun(adapter, seed).run(steps);
	});
});

describe("differential: the exclusive adapter against pi's in-memory ones", () => {
	it.each(seeds(100))("seed %i", async (seed) => {
		await new DifferentialRun(exclusive, seed).run(steps);
	});
});

describe("differential: the pi-compat drop-ins against pi's in-memory ones", () => {
	it.each(seeds(100))("seed %i", async (seed) => {
		await new DifferentialRun(dropIn, seed).run(steps);
	});
});
