/** The pagination envelope of spec 2.2. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}
