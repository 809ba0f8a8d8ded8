import { type Connection, ErrorCodes, ResponseError } from "vscode-languageserver/node";

/**
 * The LSP lifecycle's first rule: until `initialize` has been answered, a request is refused with
 * ServerNotInitialized (-32002) and a notification is dropped; only `exit` is heard. The
 * connection handed back is the library's with every `on...` registration guarded, so a handler
 * added later (by any module) is guarded too without knowing about it.
 */

/** Registrations heard before initialize: the request that starts it, and the one that ends the process. */
const EXEMPT = new Set(["onInitialize", "onExit"]);

export interface GuardedConnection {
  connection: Connection;
  /** Called once initialize is answered: from then on every handler runs. */
  initialized(): void;
}

export function guardUntilInitialized(raw: Connection): GuardedConnection {
  let ready = false;
  const refusal = (method: string) =>
    new ResponseError(ErrorCodes.ServerNotInitialized, `'${method}' before 'initialize': send initialize first`);
  const guard =
    (name: string, handler: (...args: unknown[]) => unknown) =>
    (...args: unknown[]): unknown =>
      // A notification's return value goes nowhere: refusing it is dropping it.
      ready ? handler(...args) : refusal(name);
  const connection = new Proxy(raw, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (typeof key !== "string" || !/^on[A-Z]/.test(key) || EXEMPT.has(key)) return fn.bind(target);
      return (...args: unknown[]) => {
        // onRequest/onNotification take (method, handler) or a catch-all (handler) alone.
        const last = args.length - 1;
        const handler = args[last];
        if (typeof handler !== "function") return fn.apply(target, args);
        const name = typeof args[0] === "string" ? args[0] : key;
        const wrapped =
          last === 0 && (key === "onRequest" || key === "onNotification")
            ? (method: string, ...rest: unknown[]) =>
                ready ? (handler as (...a: unknown[]) => unknown)(method, ...rest) : refusal(method)
            : guard(name, handler as (...a: unknown[]) => unknown);
        return fn.apply(target, [...args.slice(0, last), wrapped]);
      };
    },
  });
  // A request no handler knows is refused the same way before initialize; after it, MethodNotFound as before.
  connection.onRequest((method: string) => new ResponseError(ErrorCodes.MethodNotFound, `Unhandled method ${method}`));
  return {
    connection,
    initialized: () => {
      ready = true;
    },
  };
}
