import { InvalidArgumentError } from "commander";

export function parsePort(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < 1 || n > 65535)
      throw new InvalidArgumentError(`${flag} must be a port number 1-65535, got '${value}'`);
    return n;
  };
}

export function parsePositiveInt(flag: string, min = 1, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min)
      throw new InvalidArgumentError(`${flag} must be a whole number >= ${min}, got '${value}'`);
    if (n > max) throw new InvalidArgumentError(`${flag} must be at most ${max}, got '${value}'`);
    return n;
  };
}

/** A folder argument that is not empty: `--models ''` would otherwise mean the current folder. */
export function parseDir(flag: string) {
  return (value: string): string => {
    if (value.trim() === "")
      throw new InvalidArgumentError(`${flag} is empty; give the model repository's folder, e.g. ${flag} models`);
    return value;
  };
}
