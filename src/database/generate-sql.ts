import type { EntityManager } from 'typeorm';

/**
 * Marks a repository method whose SQL `npm run sql` writes to `src/queries/<module>.sql`, so that a
 * reviewer sees every statement the method sends and how a change alters it. The script calls the
 * method once per entry of `calls`, with its `params`, in a transaction it always rolls back.
 * At run time the decorator only records these entries on the method.
 *
 *   @GenerateSql({ params: ['proj_1', 42] })
 *   findByCode(projectId: string, codeId: number) { ... }
 *
 *   @GenerateSql({ name: 'by id', params: ['proj_1', { id: 1 }] }, { name: 'by username', params: ['proj_1', { username: 'ada' }] })
 *   lockRedeemer(projectId: string, who: RedeemerLookup) { ... }
 */
export interface GenerateSqlCall {
  /**
   * The method's arguments (plain values: strings, numbers, dates, arrays, objects). A function
   * makes them inside the call's transaction, its own statements not recorded, for an argument only
   * running code has: from the instance (what an earlier call of the same repository answered) and
   * the call (`manager()`, the transaction's `EntityManager`).
   */
  params?:
    unknown[] | ((instance: never, call: { manager: () => EntityManager }) => unknown[] | Promise<unknown[]>);
  /** Tells the calls of one method apart in the generated file, when it has several. */
  name?: string;
  /**
   * `false`: the call runs outside any transaction, for a read whose SQL differs there (a read
   * gathered with others into one statement). Never for a method that writes: nothing rolls it back.
   */
  transaction?: false;
}

/** The metadata key under which the calls are recorded on the method. */
export const GENERATE_SQL = 'generate-sql';

export function GenerateSql(...calls: GenerateSqlCall[]): MethodDecorator {
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(GENERATE_SQL, calls.length ? calls : [{}], descriptor.value as object);
    return descriptor;
  };
}
