import { isTimeZoneName } from './time-zone';

describe('isTimeZoneName', () => {
  it.each([
    'UTC',
    'America/New_York',
    'america/new_york',
    'ASIA/KOLKATA',
    'Asia/Calcutta',
    'Etc/GMT+5',
    'US/Eastern',
  ])('takes %p, a zone or link of the IANA database in any letter case', (name) =>
    expect(isTimeZoneName(name)).toBe(true),
  );

  it.each([
    ['an unknown name', 'Mars/Olympus_Mons'],
    ['an offset', '+05:00'],
    ['a negative offset', '-03:30'],
    ['an offset without colon', '+0530'],
    ['the empty string', ''],
    ['65 characters', 'A'.repeat(65)],
    ['a number', 5],
    ['null', null],
  ])('refuses %s', (_, value) => expect(isTimeZoneName(value)).toBe(false));
});
