import { EntityManager } from 'typeorm';
import { addRider, carrying, ridersAlone, takeRiders } from './riders';

describe('riders', () => {
  const rider = (name: string, value: unknown) => ({
    name,
    sql: `INSERT INTO t (v) SELECT x FROM jsonb_array_elements($1::jsonb) AS x`,
    value,
  });

  it('go in front of the carrier, their one parameter numbered after its own', () => {
    const carried = carrying(
      { name: 'events.insert', text: 'WITH ev AS (INSERT INTO e VALUES ($1, $2) RETURNING 1) SELECT 1' },
      2,
      [rider('audit', '[1]'), rider('other', '[2]')],
    );
    expect(carried.statement.name).toBe('events.insert+audit+other');
    expect(carried.statement.text).toBe(
      'WITH rider_0 AS (INSERT INTO t (v) SELECT x FROM jsonb_array_elements($3::jsonb) AS x),\n' +
        'rider_1 AS (INSERT INTO t (v) SELECT x FROM jsonb_array_elements($4::jsonb) AS x),\n' +
        'ev AS (INSERT INTO e VALUES ($1, $2) RETURNING 1) SELECT 1',
    );
    expect(carried.values).toEqual(['[1]', '[2]']);
  });

  it('only a WITH statement carries', () => {
    expect(() => carrying({ name: 'x', text: 'SELECT 1' }, 0, [rider('audit', '[]')])).toThrow(
      /cannot carry/,
    );
  });

  it('alone, they are one statement', () => {
    expect(ridersAlone([rider('audit', '[1]')])).toEqual({
      text: 'WITH rider_0 AS (INSERT INTO t (v) SELECT x FROM jsonb_array_elements($1::jsonb) AS x) SELECT 1',
      values: ['[1]'],
    });
  });

  it('wait per transaction and are taken once', () => {
    const one = {} as EntityManager;
    const two = {} as EntityManager;
    addRider(one, rider('a', 1));
    addRider(one, rider('b', 2));
    addRider(two, rider('c', 3));
    expect(takeRiders(one).map((r) => r.name)).toEqual(['a', 'b']);
    expect(takeRiders(one)).toEqual([]);
    expect(takeRiders(two).map((r) => r.name)).toEqual(['c']);
  });
});
