/** Name of the hidden CSRF field every console form carries (checked on every POST by the ConsoleGuard). */
export const CSRF_FIELD = '_csrf';
