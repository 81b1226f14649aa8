type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * The OpenAPI document with its shared parameters and responses (`#/components/parameters/...`,
 * `#/components/responses/...`) copied back into the operations that reference them, as a
 * client's tooling resolves them: tests read an operation's parameters and answers in one place.
 * Schema `$ref`s stay as they are. The document given is not changed.
 */
export function inlineShared<T extends Json>(doc: T): T {
  const copy: Json = structuredClone(doc);
  const target = (ref: string, kind: 'parameters' | 'responses') => {
    const prefix = `#/components/${kind}/`;
    if (!ref.startsWith(prefix)) return undefined;
    const found = copy.components?.[kind]?.[ref.slice(prefix.length)];
    if (!found) throw new Error(`openapi: ${ref} points to nothing`);
    return structuredClone(found);
  };
  for (const item of Object.values<Json>(copy.paths ?? {})) {
    for (const method of METHODS) {
      const op: Json | undefined = item[method];
      if (!op) continue;
      if (op.parameters)
        op.parameters = op.parameters.map((p: Json) => (p.$ref ? (target(p.$ref, 'parameters') ?? p) : p));
      for (const [status, response] of Object.entries<Json>(op.responses ?? {}))
        if (response.$ref) op.responses[status] = target(response.$ref, 'responses') ?? response;
    }
  }
  return copy as T;
}
