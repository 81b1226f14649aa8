import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ERROR_STATUS } from './error-codes';

export class ApiErrorDetail {
  @ApiProperty({ example: 'customer.value' })
  field: string;

  @ApiProperty({ example: 'value must be at most 128 characters' })
  message: string;
}

export class ApiErrorBody {
  @ApiProperty({ enum: Object.keys(ERROR_STATUS), example: 'VALIDATION_FAILED' })
  code: string;

  @ApiProperty({ example: 'The request is not valid.' })
  message: string;

  @ApiPropertyOptional({ type: [ApiErrorDetail] })
  details?: ApiErrorDetail[];
}

/** The one error body of every endpoint (docs/api-guide.md#envelope-and-errors). */
export class ApiErrorResponse {
  @ApiProperty({ example: false })
  ok: false;

  @ApiProperty({ example: '6f1c2f9e-7d0a-4a55-9d3b-1b7f9a0c1e22' })
  requestId: string;

  @ApiProperty({ type: ApiErrorBody })
  error: ApiErrorBody;
}
