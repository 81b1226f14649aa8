import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDefined, IsObject, IsString, Length, ValidateNested } from 'class-validator';
import { CustomerRecord, CustomerRefDto } from '../../customers/dto/customer.dto';

export class LoginDto {
  @ApiProperty({
    type: CustomerRefDto,
    description: 'Any identifier of the customer, type `username` included.',
  })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomerRefDto)
  identifier: CustomerRefDto;

  @ApiProperty({ example: 'correct horse battery', maxLength: 128 })
  @IsString()
  @Length(1, 128)
  password: string;
}

export class LoginResult {
  @ApiProperty({
    example: 'q3Zb9yJ0uX4c1rS2kV8wN5mT7pL6hG0fE3dC2bA1zY8',
    description: 'Opaque; send as `Authorization: Bearer <token>`.',
  })
  token: string;

  @ApiProperty({ example: 'Bearer', enum: ['Bearer'] })
  tokenType: 'Bearer';

  @ApiProperty({ example: '2026-02-01T00:00:00.000Z' })
  expiresAt: string;

  @ApiProperty({ type: CustomerRecord })
  customer: CustomerRecord;
}

export class PublicRedeemDto {
  @ApiProperty({
    example: '7KQ2-M9XD-4TRB-C1ZP',
    description: 'Case, spaces and dashes are ignored; O reads as 0, I and L as 1.',
  })
  @IsString()
  @Length(1, 64)
  code: string;
}

export class ChangePasswordDto {
  @ApiProperty({ example: 'correct horse battery', maxLength: 128, description: 'The password in use now.' })
  @IsString()
  @Length(1, 128)
  currentPassword: string;

  @ApiProperty({
    example: 'battery staple horse',
    minLength: 8,
    maxLength: 128,
    description: 'The new password: 8 to 128 characters, stored as a bcrypt hash only.',
  })
  @IsString()
  @Length(8, 128)
  newPassword: string;
}
