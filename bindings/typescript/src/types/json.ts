/** JSON values as the worker exchanges them. */

/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object (handler results, task context, step configuration, ...). */
export type JsonObject = Record<string, unknown>;

/** True for a plain (non-array, non-null) object. */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` when it is an object, else `{}` (untrusted event parts). */
export function objectOrEmpty(value: unknown): JsonObject {
  return isObject(value) ? value : {};
}

/** `value` when it is a non-empty string, else null. */
export function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/** `value` when it is a finite integer, else `fallback`. */
export function integerOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) ? value : fallback;
}
