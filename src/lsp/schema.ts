import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { ModelConfigSchema } from "../repo/gen/model_config_pb.js";
import { FIELD_DOCS } from "./gen/field-docs.js";

/**
 * The ModelConfig schema as the editor walks it: what may be written inside each message, what a
 * field's values are, and Triton's documentation of each.
 */

/** Where the cursor is in the schema: inside a message, or inside one entry of a map field. */
export type Scope = { kind: "message"; desc: DescMessage } | { kind: "map-entry"; field: DescField };

export const ROOT_SCOPE: Scope = { kind: "message", desc: ModelConfigSchema };

/** The scope inside the value of `name` in `scope`; undefined when that is no message. */
export function enter(scope: Scope, name: string): Scope | undefined {
  if (scope.kind === "map-entry") {
    const f = scope.field;
    if (name === "value" && f.fieldKind === "map" && f.mapKind === "message")
      return { kind: "message", desc: f.message };
    return undefined;
  }
  const f = scope.desc.fields.find((d) => d.name === name);
  if (!f) return undefined;
  if (f.fieldKind === "map") return { kind: "map-entry", field: f };
  if (f.fieldKind === "message") return { kind: "message", desc: f.message };
  if (f.fieldKind === "list" && f.listKind === "message") return { kind: "message", desc: f.message };
  return undefined;
}

/** The scope at the end of a path of field names from the top level. */
export function scopeAt(names: readonly string[]): Scope | undefined {
  let scope: Scope | undefined = ROOT_SCOPE;
  for (const n of names) {
    if (!scope) return undefined;
    scope = enter(scope, n);
  }
  return scope;
}

/** What a name inside a scope stands for. */
export interface FieldInfo {
  name: string;
  /** The field; absent for a map entry's key and value, described by `mapField`. */
  field?: DescField;
  mapField?: DescField;
  /** `uint32`, `ModelInput (repeated)`, `map<string, string>`, `DataType`. */
  type: string;
  /** A message (written `name { ... }`), rather than a value (written `name: value`). */
  isMessage: boolean;
  repeated: boolean;
  /** The enum its values come from. */
  enum?: DescEnum;
  scalar?: ScalarType;
  doc?: string;
  /** The schema's message or enum name of the field's type, for the type's own doc. */
  typeDoc?: string;
}

const SCALAR_NAMES: Record<number, string> = {
  [ScalarType.DOUBLE]: "double",
  [ScalarType.FLOAT]: "float",
  [ScalarType.INT64]: "int64",
  [ScalarType.UINT64]: "uint64",
  [ScalarType.INT32]: "int32",
  [ScalarType.FIXED64]: "fixed64",
  [ScalarType.FIXED32]: "fixed32",
  [ScalarType.BOOL]: "bool",
  [ScalarType.STRING]: "string",
  [ScalarType.BYTES]: "bytes",
  [ScalarType.UINT32]: "uint32",
  [ScalarType.SFIXED32]: "sfixed32",
  [ScalarType.SFIXED64]: "sfixed64",
  [ScalarType.SINT32]: "sint32",
  [ScalarType.SINT64]: "sint64",
};

/** `inference.ModelInput.Format` -> `ModelInput.Format`, the key of FIELD_DOCS. */
export const docKey = (typeName: string): string => typeName.replace(/^inference\./, "");

export function docOf(key: string): string | undefined {
  return FIELD_DOCS[key];
}

function describeField(f: DescField): FieldInfo {
  const base = { name: f.name, field: f, doc: docOf(`${docKey(f.parent.typeName)}.${f.name}`) };
  switch (f.fieldKind) {
    case "scalar":
      return { ...base, type: SCALAR_NAMES[f.scalar] ?? "scalar", isMessage: false, repeated: false, scalar: f.scalar };
    case "enum":
      return {
        ...base,
        type: f.enum.name,
        isMessage: false,
        repeated: false,
        enum: f.enum,
        typeDoc: docKey(f.enum.typeName),
      };
    case "message":
      return { ...base, type: f.message.name, isMessage: true, repeated: false, typeDoc: docKey(f.message.typeName) };
    case "list":
      if (f.listKind === "message")
        return {
          ...base,
          type: `${f.message.name} (repeated)`,
          isMessage: true,
          repeated: true,
          typeDoc: docKey(f.message.typeName),
        };
      if (f.listKind === "enum")
        return { ...base, type: `${f.enum.name} (repeated)`, isMessage: false, repeated: true, enum: f.enum };
      return {
        ...base,
        type: `${SCALAR_NAMES[f.scalar] ?? "scalar"} (repeated)`,
        isMessage: false,
        repeated: true,
        scalar: f.scalar,
      };
    case "map": {
      const value =
        f.mapKind === "message" ? f.message.name : f.mapKind === "enum" ? f.enum.name : (SCALAR_NAMES[f.scalar] ?? "");
      return {
        ...base,
        type: `map<${SCALAR_NAMES[f.mapKey] ?? "key"}, ${value}>`,
        isMessage: true,
        repeated: true,
        ...(f.mapKind === "message" ? { typeDoc: docKey(f.message.typeName) } : {}),
      };
    }
  }
}

/** The names that may be written inside a scope. */
export function fieldsOf(scope: Scope): FieldInfo[] {
  if (scope.kind === "message") return scope.desc.fields.map(describeField);
  const f = scope.field;
  if (f.fieldKind !== "map") return [];
  const keyType = SCALAR_NAMES[f.mapKey] ?? "key";
  const value: FieldInfo =
    f.mapKind === "message"
      ? {
          name: "value",
          mapField: f,
          type: f.message.name,
          isMessage: true,
          repeated: false,
          typeDoc: docKey(f.message.typeName),
        }
      : f.mapKind === "enum"
        ? { name: "value", mapField: f, type: f.enum.name, isMessage: false, repeated: false, enum: f.enum }
        : {
            name: "value",
            mapField: f,
            type: SCALAR_NAMES[f.scalar] ?? "",
            isMessage: false,
            repeated: false,
            scalar: f.scalar,
          };
  return [{ name: "key", mapField: f, type: keyType, isMessage: false, repeated: false, scalar: f.mapKey }, value];
}

export function fieldIn(scope: Scope, name: string): FieldInfo | undefined {
  return fieldsOf(scope).find((f) => f.name === name);
}
