import { CreateDateColumn, UpdateDateColumn, ValueTransformer } from 'typeorm';

/** Timestamps are UTC with milliseconds, the precision the API answers them with (ISO 8601). */
export const CreatedAt = () => CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 });
export const UpdatedAt = () => UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 });

/** `numeric` comes back from pg as a string; the service works with numbers. */
export const numericTransformer: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
