/** The GroveError a promise rejects with; fails the test when it resolves or rejects otherwise. */
import { expect } from "vitest";
import { GroveError } from "../src/errors.js";

export async function rejection(promise: Promise<unknown>): Promise<GroveError> {
	try {
		await promise;
	} catch (error) {
		expect(error).toBeInstanceOf(GroveError);
		return error as GroveError;
	}
	throw new Error("expected a GroveError");
}
