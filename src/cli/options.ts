import { InvalidArgumentError } from "commander";

export function parsePort(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < 1 || n > 65535)
      throw new InvalidArgumentError(`${flag} must be a port number 1-65535, got '${value}'`);
    return n;
  };
}

export function parsePositiveInt(flag: string, min = 1) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min)
      throw new InvalidArgumentError(`${flag} must be a whole number >= ${min}, got '${value}'`);
    return n;
  };
}
