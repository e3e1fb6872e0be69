/**
 * The differential harness run with pi's in-memory storage on both sides: it must find no
 * difference, so a reported one is grove's and not the harness's normalization.
 */
import { InMemorySessionRepo, InMemorySessionStorage } from "@earendil-works/pi-agent-core";
import { describe, it } from "vitest";
import { type Backend, DifferentialRun } from "./differential.js";

const pi: Backend = {
	name: "pi",
	repo: () => new InMemorySessionRepo(),
	storage: async ({ metadata, entries }) => new InMemorySessionStorage(entries ? { metadata, entries } : { metadata }),
};

describe("differential harness, pi against itself", () => {
	it.each(Array.from({ length: 50 }, (_, i) => i + 1))("seed %i", async (seed) => {
		await new DifferentialRun(pi, seed).run(40);
	});
});
